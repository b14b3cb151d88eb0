"""What a benchmark hands back: markdown, targets met or missed, and plain statistics."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    wanted: str  # the target as stated, e.g. "≥ 99 %"
    measured: str  # the number, e.g. "100.0 %"
    met: bool
    note: str = ""


@dataclass(slots=True)
class Section:
    title: str
    body: list[str] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    seconds: float = 0.0
    stolen: float | None = None  # the share of the CPUs' time the hypervisor took meanwhile

    def add(self, *lines: str) -> None:
        self.body.extend(lines)

    def target(self, name: str, wanted: str, measured: str, met: bool, note: str = "") -> None:
        self.targets.append(Target(name, wanted, measured, met, note))


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return [*out, ""]


def pct(value: float | None, digits: int = 1) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{100 * value:.{digits}f} %"


def ms(seconds: float) -> str:
    value = seconds * 1000
    if value >= 100:
        return f"{value:.0f} ms"
    if value >= 1:
        return f"{value:.2f} ms"
    return f"{value:.3f} ms"


def spread(samples: Sequence[float], fmt: object = ms) -> str:
    """ "median (min–max)" of repeated runs."""
    if not samples:
        return "–"
    render = fmt if callable(fmt) else ms
    return f"{render(statistics.median(samples))} ({render(min(samples))}–{render(max(samples))})"


def quantile(samples: Sequence[float], q: float) -> float:
    """Nearest-rank quantile; q in [0, 1]."""
    if not samples:
        return math.nan
    ordered = sorted(samples)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def loglog_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least-squares slope of log(y) on log(x): 1 is linear growth, 2 quadratic."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    num = sum((a - mx) * (b - my) for a, b in zip(lx, ly, strict=True))
    den = sum((a - mx) ** 2 for a in lx)
    return num / den if den else math.nan


def met_text(met: bool) -> str:
    return "**met**" if met else "**NOT met**"


def cpu_times() -> tuple[int, int] | None:
    """(stolen, all) clock ticks of every CPU so far (Linux /proc/stat), None elsewhere.

    On a virtual machine the host may run other guests on our CPUs: that time is "steal", and
    throughput and latency drop with it while the code is unchanged."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    return fields[7], sum(fields)


def stolen_share(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    if before is None or after is None or after[1] <= before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1])

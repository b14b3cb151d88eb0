"""Tallies of probe verdicts over benchmark runs: items kept at k compactions, verdict counts,
attribution accuracy, pins intact.
"""

from __future__ import annotations

from collections.abc import Sequence

from bench.drive import Run

# Who-said-what is judged on the kinds whose line must name the speaker.
SPEAKER_KINDS = ("preference", "attribution")


def survival(runs: Sequence[Run], k: int, kinds: Sequence[str] | None = None) -> tuple[float, int]:
    kept = total = 0
    for run in runs:
        for (_, kind, seen_k), verdict in run.verdicts.items():
            if seen_k != k or (kinds is not None and kind not in kinds):
                continue
            total += 1
            kept += verdict == "kept"
    return (kept / total if total else float("nan")), total


def count_verdict(runs: Sequence[Run], verdict: str, kind: str | None = None) -> tuple[int, int]:
    hits = total = 0
    for run in runs:
        for (_, item_kind, _k), found in run.verdicts.items():
            if kind is not None and item_kind != kind:
                continue
            total += 1
            hits += found == verdict
    return hits, total


def attribution(runs: Sequence[Run]) -> tuple[float, int]:
    """Of the who-said-what items whose value is on a bound line, the share with the right name."""
    right = seen = 0
    for run in runs:
        for (_, kind, _k), verdict in run.verdicts.items():
            if kind in SPEAKER_KINDS and verdict in ("kept", "misattributed"):
                seen += 1
                right += verdict == "kept"
    return (right / seen if seen else float("nan")), seen


def pins_at(runs: Sequence[Run], k: int) -> tuple[int, int]:
    flags = [flag for run in runs for flag in run.pins.get(k, [])]
    return sum(flags), len(flags)

"""Every thread of the process on one CPU while the SQLite store serves it (storage.one_cpu).

The event loop hands each batch to the SQLite writer thread and the commit back, and the two
take turns holding the GIL. Spread over two CPUs, every hand-off wakes the other CPU (a VM
exit on a virtual machine) and moves the batch's objects between caches; on one CPU the same
work takes less CPU time and no wake-up waits. bench/RESULTS.md measures both in one run.

A pinned process cannot be moved by the kernel, so a keeper thread looks every few seconds at
how busy each CPU is with other work (other processes, or the hypervisor's steal) and moves
every thread to a quieter CPU when ours is taken.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

CHECK_SECONDS = 2.0
# A move needs the other CPU quieter by this share of a CPU: no flapping between equals.
MOVE_MARGIN = 0.25

_TASKS = Path("/proc/self/task")
_STAT = Path("/proc/stat")
# /proc/<tid>/stat: the fields after the command's closing ")" start at field 3; fields 14
# and 15 are user and system ticks, field 39 the CPU the thread last ran on.
_TICKS_FIELDS = slice(14 - 3, 15 - 3 + 1)
_PROCESSOR_FIELD = 39 - 3


@dataclass(frozen=True, slots=True)
class CpuTicks:
    """Clock ticks so far of one CPU: all of them, and those spent on anything but idling."""

    total: int
    busy: int


def quietest_cpu(
    current: int, before: Mapping[int, CpuTicks], after: Mapping[int, CpuTicks], ours: int
) -> int:
    """The CPU to run on: `current`, unless other work (all busy ticks but our `ours`) took a
    larger share of it than of another CPU, by more than MOVE_MARGIN."""
    others: dict[int, float] = {}
    for cpu, now in after.items():
        then = before.get(cpu)
        if then is None or now.total <= then.total:
            continue
        busy = now.busy - then.busy - (ours if cpu == current else 0)
        others[cpu] = max(0, busy) / (now.total - then.total)
    if current not in others:
        return current
    best = min(others, key=others.__getitem__)
    return best if others[current] - others[best] > MOVE_MARGIN else current


@contextlib.contextmanager
def one_cpu(enabled: bool = True, *, check_seconds: float = CHECK_SECONDS) -> Iterator[int | None]:
    """Pins every thread, and so every thread started inside, to the CPU this one runs on, and
    keeps them together on the quietest CPU; yields the first CPU (None: left as it was) and
    restores each thread's CPUs on exit."""
    allowed = _allowed()
    cpu = _current_cpu() if enabled and allowed and len(allowed) > 1 else None
    if allowed is None or cpu is None or cpu not in allowed:
        yield None
        return
    _pin_all({cpu})
    log.info("every thread on CPU %d of %d (storage.one_cpu)", cpu, len(allowed))
    stop = threading.Event()
    keeper = threading.Thread(
        target=_keep, args=(cpu, allowed, stop, check_seconds), name="one-cpu", daemon=True
    )
    keeper.start()
    try:
        yield cpu
    finally:
        stop.set()
        keeper.join()
        _pin_all(allowed)


def _keep(cpu: int, allowed: set[int], stop: threading.Event, every: float) -> None:
    before, ours_before = _cpu_ticks(allowed), _our_ticks()
    while not stop.wait(every):
        after, ours_after = _cpu_ticks(allowed), _our_ticks()
        best = quietest_cpu(cpu, before, after, ours_after - ours_before)
        if best != cpu:
            log.info("CPU %d is busy with other work: every thread moves to CPU %d", cpu, best)
            cpu = best
            _pin_all({cpu})
        before, ours_before = after, ours_after


def _allowed() -> set[int] | None:
    if not hasattr(os, "sched_getaffinity") or not _TASKS.is_dir():
        return None  # not Linux: nothing to pin with
    return set(os.sched_getaffinity(0))


def _current_cpu() -> int | None:
    fields = _stat_fields(Path("/proc/thread-self/stat"))
    return int(fields[_PROCESSOR_FIELD]) if fields else None


def _cpu_ticks(allowed: set[int]) -> dict[int, CpuTicks]:
    """Per CPU from /proc/stat; idle and iowait are the only ticks nobody used."""
    found: dict[int, CpuTicks] = {}
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in _STAT.read_text().splitlines():
            name, *values = line.split()
            if not name.startswith("cpu") or name == "cpu":
                continue
            cpu, ticks = int(name[3:]), [int(v) for v in values[:8]]
            if cpu in allowed:
                found[cpu] = CpuTicks(sum(ticks), sum(ticks) - ticks[3] - ticks[4])
    return found


def _our_ticks() -> int:
    """User and system ticks so far of every thread of this process."""
    total = 0
    for task in _TASKS.iterdir():
        fields = _stat_fields(task / "stat")  # empty: the thread just ended
        total += sum(map(int, fields[_TICKS_FIELDS])) if fields else 0
    return total


def _stat_fields(path: Path) -> list[str]:
    try:
        return path.read_text().rpartition(")")[2].split()
    except OSError:
        return []


def _pin_all(cpus: set[int]) -> None:
    # Linux takes a thread id here: each thread is set, and a thread inherits its creator's.
    for task in os.listdir(_TASKS):
        with contextlib.suppress(ProcessLookupError, PermissionError):  # a thread just ended
            os.sched_setaffinity(int(task), cpus)

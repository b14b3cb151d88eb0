"""Every thread of the process on one CPU while the SQLite store serves it (storage.one_cpu).

The event loop hands each batch to the SQLite writer thread and the commit back, and the two
take turns holding the GIL. Spread over two CPUs, every hand-off wakes the other CPU (a VM
exit on a virtual machine) and moves the batch's objects between caches; on one CPU the same
work takes less CPU time and no wake-up waits. bench/RESULTS.md measures both in one run.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger(__name__)

_TASKS = Path("/proc/self/task")
# /proc/<tid>/stat: the fields after the command's closing ")" start at field 3; field 39
# is the CPU the thread last ran on.
_PROCESSOR_FIELD = 39 - 3


@contextlib.contextmanager
def one_cpu(enabled: bool = True) -> Iterator[int | None]:
    """Pins every thread, and so every thread started inside, to the CPU this one runs on;
    yields that CPU (None: left as it was) and restores each thread's CPUs on exit."""
    allowed = _allowed()
    cpu = _current_cpu() if enabled and allowed and len(allowed) > 1 else None
    if allowed is None or cpu is None or cpu not in allowed:
        yield None
        return
    _pin_all({cpu})
    log.info("every thread on CPU %d of %d (storage.one_cpu)", cpu, len(allowed))
    try:
        yield cpu
    finally:
        _pin_all(allowed)


def _allowed() -> set[int] | None:
    if not hasattr(os, "sched_getaffinity") or not _TASKS.is_dir():
        return None  # not Linux: nothing to pin with
    return set(os.sched_getaffinity(0))


def _current_cpu() -> int | None:
    try:
        stat = Path("/proc/thread-self/stat").read_text()
        return int(stat.rpartition(")")[2].split()[_PROCESSOR_FIELD])
    except (OSError, ValueError, IndexError):
        return None


def _pin_all(cpus: set[int]) -> None:
    # Linux takes a thread id here: each thread is set, and a thread inherits its creator's.
    for task in os.listdir(_TASKS):
        with contextlib.suppress(ProcessLookupError, PermissionError):  # a thread just ended
            os.sched_setaffinity(int(task), cpus)

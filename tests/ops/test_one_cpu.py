"""`compactbot run` on SQLite keeps every thread on one CPU (storage.one_cpu); each check runs
in its own process, so the test process itself is never pinned."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from compactbot.bot.cli import _on_one_cpu
from compactbot.bot.one_cpu import MOVE_MARGIN, CpuTicks, quietest_cpu
from compactbot.bot.settings.config import Config, StorageConfig
from tests.cli.test_console_and_operator import waiting_console

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs Linux and at least two CPUs to pin to one",
)

PINNING = """
import json, os, threading
from compactbot.bot.one_cpu import one_cpu

stop = threading.Event()
def cpus(thread): return sorted(os.sched_getaffinity(thread.native_id))
before = threading.Thread(target=stop.wait); before.start()
with one_cpu() as cpu:
    after = threading.Thread(target=stop.wait); after.start()
    inside = [cpus(t) for t in (threading.main_thread(), before, after)]
outside = [cpus(t) for t in (threading.main_thread(), before, after)]
with one_cpu(False) as off:
    untouched = cpus(threading.main_thread())
stop.set()
print(json.dumps({"cpu": cpu, "inside": inside, "outside": outside, "off": off,
                  "untouched": untouched}))
"""


def test_every_thread_older_or_newer_shares_one_cpu_and_gets_its_cpus_back() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PINNING], capture_output=True, text=True, cwd=REPO, check=True
    )
    seen = json.loads(done.stdout)
    allowed = sorted(os.sched_getaffinity(0))
    assert seen["cpu"] in allowed
    assert seen["inside"] == [[seen["cpu"]]] * 3
    assert seen["outside"] == [allowed] * 3
    assert seen["off"] is None and seen["untouched"] == allowed


def _threads_cpus(pid: int) -> list[list[int]]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.append(sorted(os.sched_getaffinity(int(task.name))))
        except ProcessLookupError:  # a worker thread that just ended
            continue
    return found


@pytest.mark.parametrize("one_cpu", [True, False])
def test_the_console_service_runs_on_one_cpu_unless_told_not_to(
    tmp_path: Path, one_cpu: bool
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(f"storage:\n  one_cpu: {json.dumps(one_cpu)}\n")
    proc = waiting_console(tmp_path, COMPACTBOT_CONFIG=str(config))
    try:
        # The store's threads exist by now: the writer's, the reader's, the loop's.
        assert len(list(Path(f"/proc/{proc.pid}/task").iterdir())) >= 3
        cpus = _threads_cpus(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
        assert proc.stdin is not None
        proc.stdin.close()
    allowed = sorted(os.sched_getaffinity(0))
    if one_cpu:
        assert len({cpu for thread in cpus for cpu in thread}) == 1, cpus
        assert all(len(thread) == 1 for thread in cpus)
    else:
        assert cpus == [allowed] * len(cpus)


def test_only_the_sqlite_service_pins() -> None:
    sqlite, postgres = Config(), Config(storage=StorageConfig(database="postgresql://u@h/db"))
    assert _on_one_cpu("run", sqlite) and _on_one_cpu("console", sqlite)
    assert not _on_one_cpu("worker", sqlite) and not _on_one_cpu("history", sqlite)
    assert not _on_one_cpu("run", postgres)
    off = Config(storage=StorageConfig(one_cpu=False))
    assert not _on_one_cpu("run", off)


def _ticks(**busy: int) -> dict[int, CpuTicks]:
    """Two checks 200 ticks apart, with `busy` ticks of them used on each CPU ("cpu0"...)."""
    return {int(name[3:]): CpuTicks(200, used) for name, used in busy.items()}


ZERO = {0: CpuTicks(0, 0), 1: CpuTicks(0, 0)}


def test_the_threads_move_only_off_a_cpu_that_other_work_has_taken() -> None:
    assert quietest_cpu(0, ZERO, _ticks(cpu0=0, cpu1=0), ours=0) == 0
    assert quietest_cpu(0, ZERO, _ticks(cpu0=190, cpu1=10), ours=185) == 0  # busy with us
    assert quietest_cpu(0, ZERO, _ticks(cpu0=190, cpu1=10), ours=20) == 1  # taken by others
    assert quietest_cpu(1, ZERO, _ticks(cpu0=20, cpu1=200), ours=100) == 0
    # Within the margin: no move, so that two equally busy CPUs do not trade the process.
    slightly = int(200 * MOVE_MARGIN) - 2
    assert quietest_cpu(0, ZERO, _ticks(cpu0=slightly + 10, cpu1=10), ours=0) == 0
    assert quietest_cpu(0, ZERO, _ticks(cpu1=0), ours=0) == 0  # nothing known of ours


KEEPER = """
import json, os, subprocess, sys, time
from compactbot.bot.one_cpu import one_cpu

with one_cpu(check_seconds=0.2) as cpu:
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        os.sched_setaffinity(hog.pid, {cpu})
        deadline = time.monotonic() + 20
        while os.sched_getaffinity(0) == {cpu} and time.monotonic() < deadline:
            time.sleep(0.05)
        moved = sorted(os.sched_getaffinity(0))
    finally:
        hog.kill()
        hog.wait()
print(json.dumps({"cpu": cpu, "moved": moved}))
"""


def test_a_process_hogging_our_cpu_moves_every_thread_to_a_quiet_one() -> None:
    done = subprocess.run(
        [sys.executable, "-c", KEEPER], capture_output=True, text=True, cwd=REPO, check=True
    )
    seen = json.loads(done.stdout)
    assert len(seen["moved"]) == 1 and seen["moved"] != [seen["cpu"]]

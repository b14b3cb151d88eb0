"""The soak's processes: one zygote forks every ingress and worker; their logs tell who is ready
and who leads (bot/workers/leadership.py logs `leading (lock=…)` when it takes the advisory
lock)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

READY_SECONDS = 60.0
STOP_SECONDS = 20.0
POLL_SECONDS = 0.05
READY_LINES = {"worker": "answering turns", "ingress": "serving: telegram"}
LEADING = "leading (lock="
NOT_LEADING = "no longer leading"
_TIME_FORMAT = "%Y-%m-%d %H:%M:%S,%f"


@dataclass(slots=True)
class Proc:
    role: str
    pid: int
    log: Path
    alive: bool = True
    ready: bool = False
    leading: bool = False
    led_at: list[float] = field(default_factory=list)  # wall-clock times it took the lock
    _offset: int = 0
    _partial: str = ""

    def scan(self) -> None:
        """Read what the process logged since the last scan."""
        try:
            with self.log.open("rb") as handle:
                handle.seek(self._offset)
                chunk = handle.read()
        except FileNotFoundError:
            return
        self._offset += len(chunk)
        text = self._partial + chunk.decode(errors="replace")
        lines = text.split("\n")
        self._partial = lines.pop()
        for line in lines:
            if READY_LINES[self.role] in line:
                self.ready = True
            if NOT_LEADING in line:
                self.leading = False
            elif LEADING in line:
                self.leading = True
                self.led_at.append(_logged_at(line))


def _logged_at(line: str) -> float:
    """The wall-clock time at the start of a plain log line (now, if it has none)."""
    try:
        return dt.datetime.strptime(line[:23], _TIME_FORMAT).timestamp()
    except ValueError:
        return time.time()


class Fleet:
    """Spawns, kills and reaps the bot's processes through the zygote."""

    def __init__(self, zygote: asyncio.subprocess.Process, workdir: Path) -> None:
        self._zygote = zygote
        self._workdir = workdir
        self._lock = asyncio.Lock()
        self._count = 0
        self.procs: list[Proc] = []

    async def _ask(self, line: str) -> str:
        stdin, stdout = self._zygote.stdin, self._zygote.stdout
        assert stdin is not None and stdout is not None
        async with self._lock:
            stdin.write(f"{line}\n".encode())
            await stdin.drain()
            answer = await asyncio.wait_for(stdout.readline(), READY_SECONDS)
        if not answer:
            raise RuntimeError("the soak's zygote exited")
        return answer.decode().strip()

    async def spawn(self, role: str) -> Proc:
        self._count += 1
        log = self._workdir / f"{role}-{self._count:03d}.log"
        pid = int((await self._ask(f"spawn {role} {log}")).removeprefix("spawned "))
        proc = Proc(role, pid, log)
        self.procs.append(proc)
        return proc

    def scan(self) -> None:
        for proc in self.procs:
            if proc.alive:
                proc.scan()

    def alive(self, role: str) -> list[Proc]:
        return [p for p in self.procs if p.alive and p.role == role]

    def leader(self) -> Proc | None:
        self.scan()
        return next((p for p in self.alive("worker") if p.leading), None)

    async def until_ready(self, procs: list[Proc], seconds: float = READY_SECONDS) -> None:
        deadline = time.monotonic() + seconds
        while True:
            self.scan()
            if all(p.ready for p in procs):
                return
            dead = [p for p in procs if not p.ready and not _running(p.pid)]
            if dead or time.monotonic() > deadline:
                raise RuntimeError(f"{dead[0].role if dead else 'a process'} did not start")
            await asyncio.sleep(0.05)

    async def kill(self, proc: Proc) -> None:
        """SIGKILL, then reap it at once (a zombie would still look alive to lease reclaim)."""
        os.kill(proc.pid, signal.SIGKILL)
        await self._ask(f"wait {proc.pid}")
        proc.scan()
        proc.alive = proc.leading = False

    async def stop(self, proc: Proc) -> int:
        """SIGTERM and reap; its exit status (SIGKILL after STOP_SECONDS: -9)."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGTERM)
        if not await poll_until(lambda: not _running(proc.pid), STOP_SECONDS):
            os.kill(proc.pid, signal.SIGKILL)
        answer = await self._ask(f"wait {proc.pid}")
        proc.scan()
        proc.alive = proc.leading = False
        return int(answer.rsplit(" ", 1)[1])

    async def stop_all(self) -> None:
        for proc in [p for p in self.procs if p.alive]:
            await self.stop(proc)

    def tail(self, lines: int = 30) -> str:
        """The end of every log (for a failed run)."""
        out = []
        for proc in self.procs[-8:]:
            with contextlib.suppress(OSError):
                text = proc.log.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {proc.log.name} (pid {proc.pid})\n" + "\n".join(text))
        return "\n".join(out)


async def poll_until(condition: Callable[[], bool], seconds: float) -> bool:
    """Wait until `condition()` holds (True) or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(POLL_SECONDS)
    return True


def cpu_seconds(pid: int) -> float:
    """User and system CPU time the process used so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@contextlib.asynccontextmanager
async def fleet(workdir: Path, env: dict[str, str]) -> AsyncIterator[Fleet]:
    zygote = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.reliability.run_zygote",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=workdir,
        env=env,
    )
    running = Fleet(zygote, workdir)
    try:
        yield running
    finally:
        for proc in running.procs:
            if proc.alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
        if zygote.stdin is not None:
            zygote.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            zygote.kill()
        await zygote.wait()

"""Forks real `compactbot` processes (`run`, `worker`, `ingress`) from one preloaded interpreter.

    python -m tests.reliability.run_zygote     (environment: the bot's settings)

stdin commands, one per line: `spawn ROLE LOGFILE` forks a child running
`compactbot.bot.cli.main([ROLE])` with stderr appended to LOGFILE and prints `spawned PID`; `wait
PID` reaps it and prints `exited PID CODE` (negative: the signal). Crash tests and the soaks kill
the children: importing the bot once instead of per start (over a second on a busy 2-core machine)
is what lets many kill-and-restart rounds finish in seconds, and reaping at once keeps a killed
child from looking alive to the lease reclaim that checks its pid.
"""

from __future__ import annotations

import os
import sys

import compactbot.adapters.telegram
import compactbot.bot.cli
import compactbot.bot.modes
import compactbot.bot.workers.worker_mode
import compactbot.scheduler.overnight

PRELOADED = (
    compactbot.adapters.telegram,
    compactbot.bot.modes,
    compactbot.bot.workers.worker_mode,
    compactbot.scheduler.overnight,
)


def spawn(role: str, log_path: str) -> int:
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        devnull = os.open(os.devnull, os.O_RDWR)
        log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(devnull, 0)
        os.dup2(devnull, 1)
        os.dup2(log, 2)
        compactbot.bot.cli.main([role])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        os._exit(code)
    return 0  # not reached: the child always leaves through os._exit


def main() -> None:
    for line in sys.stdin:
        command, *args = line.split()
        if command == "spawn":
            print(f"spawned {spawn(args[0], args[1])}", flush=True)
        elif command == "wait":
            _, status = os.waitpid(int(args[0]), 0)
            print(f"exited {args[0]} {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    main()

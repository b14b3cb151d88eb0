"""Forks real `compactbot run` processes from one interpreter that has already imported them.

    python -m tests.reliability.run_zygote LOGFILE     (environment: the bot's settings)

stdin commands, one per line: `spawn` forks a child that runs `bot.cli.main(["run"])` and
prints `spawned PID`; `wait PID` reaps it and prints `exited PID CODE` (negative: the signal).
Crash tests kill the children; importing the bot once instead of per start (about 1.4 s on
a busy 2-core machine) is what lets thirty kill-and-restart rounds finish in seconds.
"""

from __future__ import annotations

import os
import sys

import adapters.telegram
import bot.cli
import bot.modes
import scheduler.overnight

PRELOADED = (adapters.telegram, bot.modes, scheduler.overnight)


def spawn(log_path: str) -> int:
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
        bot.cli.main(["run"])
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    finally:
        os._exit(code)
    return 0  # not reached: the child always leaves through os._exit


def main() -> None:
    log_path = sys.argv[1]
    for line in sys.stdin:
        command, _, arg = line.strip().partition(" ")
        if command == "spawn":
            print(f"spawned {spawn(log_path)}", flush=True)
        elif command == "wait":
            _, status = os.waitpid(int(arg), 0)
            print(f"exited {arg} {os.waitstatus_to_exitcode(status)}", flush=True)


if __name__ == "__main__":
    main()

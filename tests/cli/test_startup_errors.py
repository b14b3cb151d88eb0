"""A start-up failure an operator must fix is one line on stderr and exit status 1."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

from tests.cli.test_console_and_operator import env_for


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_database_is_one_line_without_a_traceback_or_password(
    tmp_path: Path,
) -> None:
    dsn = f"postgresql://bot:s3cret-pw@127.0.0.1:{_closed_port()}/compactbot"
    run = subprocess.run(
        [sys.executable, "-m", "compactbot.bot", "run"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env_for(tmp_path, COMPACTBOT_DB=dsn),
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 1
    assert "Traceback" not in run.stderr and "s3cret-pw" not in run.stderr
    [line] = [line for line in run.stderr.splitlines() if "could not start" in line]
    assert "cannot connect to postgresql://bot:***@127.0.0.1" in line

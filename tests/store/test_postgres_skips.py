"""Without a reachable PostgreSQL its cases skip with one line; COMPACTBOT_REQUIRE_PG fails them."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests import postgres_server

REPO = Path(__file__).resolve().parents[2]


def _pytest_against_nothing(*, required: bool) -> subprocess.CompletedProcess[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        postgres_server.DSN_ENV: f"postgresql://nobody@127.0.0.1:{port}/none",
        postgres_server.REQUIRE_ENV: "1" if required else "",
    }
    return subprocess.run(
        [sys.executable, "-m", "pytest", "tests/store/test_search.py", "-q", "-rs",
         "-p", "no:randomly", "-p", "no:cacheprovider", "-k", "postgresql"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )  # fmt: skip


def test_unreachable_server_skips_each_case_with_a_one_line_reason() -> None:
    run = _pytest_against_nothing(required=False)

    assert run.returncode == 0, run.stdout
    reasons = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert reasons and all("PostgreSQL not reachable at" in line for line in reasons)
    assert " passed" not in run.stdout and "skipped" in run.stdout


def test_unreachable_server_fails_when_postgresql_is_required() -> None:
    run = _pytest_against_nothing(required=True)

    assert run.returncode == 1, run.stdout
    assert "COMPACTBOT_REQUIRE_PG=1 makes this a failure" in run.stdout
    assert " skipped" not in run.stdout

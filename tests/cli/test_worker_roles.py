"""`compactbot worker` / `compactbot ingress` refuse what they cannot serve: one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from compactbot.bot.cli import build_parser, shard_ids
from tests.cli.test_console_and_operator import env_for


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compactbot.bot", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env_for(tmp_path, COMPACTBOT_DB=str(tmp_path / "bot.db")),
        cwd=tmp_path,
        timeout=120,
    )


@pytest.mark.parametrize("role", ["worker", "ingress"])
def test_the_roles_refuse_sqlite_with_one_line_and_exit_2(tmp_path: Path, role: str) -> None:
    done = run(tmp_path, role)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    [line] = [line for line in done.stderr.splitlines() if "PostgreSQL" in line]
    assert line.startswith(f"compactbot {role}: needs PostgreSQL")
    assert not (tmp_path / "bot.db").exists()  # refused before anything was opened


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--shards", "0-3"], "--shards and --shard-count go together"),
        (["--shards", "0-8", "--shard-count", "8"], "shard ids must be below --shard-count 8"),
    ],
)
def test_shard_flags_that_disagree_exit_2(tmp_path: Path, flags: list[str], says: str) -> None:
    done = run(tmp_path, "worker", *flags)
    assert done.returncode == 2
    assert says in done.stderr


def test_shard_ids_accept_ranges_and_lists() -> None:
    assert shard_ids("0-3") == (0, 1, 2, 3)
    assert shard_ids("5,0-1,5") == (0, 1, 5)
    args = build_parser().parse_args(["worker", "--shards", "4-7", "--shard-count", "8"])
    assert args.shards == (4, 5, 6, 7) and args.shard_count == 8
    with pytest.raises(SystemExit):
        build_parser().parse_args(["worker", "--shards", "a-b"])

"""Operator reports never write, and the console survives bytes that are not UTF-8."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

from compactbot.bot.store.sqlite.store import SqliteStore
from tests.cli.test_console_and_operator import bot_lines, compactbot, env_for

REPORTS = (("chats",), ("history", "console:r"), ("stats",), ("deadletters",))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_only_copy(source: Path, directory: Path) -> Path:
    directory.mkdir()
    copy = directory / "bot.db"
    shutil.copyfile(source, copy)
    copy.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    directory.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP)
    return copy


def as_older_schema(path: Path) -> None:
    """Roll the copy back to before migration 4, which any writable open would re-apply."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("DROP TABLE dead_letters")
        conn.execute("DELETE FROM schema_version WHERE version >= 4")
        conn.commit()


def test_reports_work_on_a_read_only_copy_of_the_database_and_change_nothing(
    tmp_path: Path,
) -> None:
    console = compactbot(tmp_path, "console", "--room", "r", stdin="alice: the plan is tuesday\n")
    assert console.returncode == 0, console.stderr
    # A chat with settings but no session yet: listing it used to open one.
    assert compactbot(tmp_path, "config", "set", "telegram:-5", "threshold", "0.5").returncode == 0
    older = tmp_path / "older.db"
    shutil.copyfile(tmp_path / "bot.db", older)
    as_older_schema(older)
    copies = {
        "current": read_only_copy(tmp_path / "bot.db", tmp_path / "ro"),
        "older": read_only_copy(older, tmp_path / "ro-older"),
    }
    before = {name: digest(path) for name, path in copies.items()}
    try:
        runs = {
            (name, args[0]): compactbot(tmp_path, *args, COMPACTBOT_DB=str(path))
            for name, path in copies.items()
            for args in REPORTS
            if (name, args[0]) != ("older", "deadletters")
        }
        after = {name: digest(path) for name, path in copies.items()}
        leftovers = sorted(p.name for p in copies["current"].parent.iterdir())
    finally:
        for directory in ("ro", "ro-older"):
            (tmp_path / directory).chmod(stat.S_IRWXU)

    for key, run in runs.items():
        assert run.returncode == 0, (key, run.stderr)
    for name in copies:
        chats = runs[(name, "chats")].stdout
        assert "console:r" in chats and "telegram:-5" in chats
        assert "0 msgs" in chats  # telegram:-5 has no session, and got none
        assert "the plan is tuesday" in runs[(name, "history")].stdout
        assert "chats: 2  sessions: 1" in runs[(name, "stats")].stdout
    assert runs[("current", "deadletters")].stdout.strip() == "no dead letters"
    assert after == before  # no write, not even the migration a writer would apply
    assert leftovers == ["bot.db"] or os.geteuid() == 0  # root may leave SQLite's -shm


def test_reports_on_a_missing_database_create_no_file(tmp_path: Path) -> None:
    run = compactbot(tmp_path, "chats")
    assert run.returncode == 0 and run.stdout.strip() == "no chats yet"
    assert not (tmp_path / "bot.db").exists()


def test_console_survives_an_invalid_utf8_byte_and_answers_every_line(tmp_path: Path) -> None:
    script = b"alice: first \xff\xfe bad bytes @bot\nbob: second line @bot\n"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "compactbot.bot",
            "console",
            "--room",
            "bytes",
            "--model",
            "offline",
        ],
        input=script,
        capture_output=True,
        env=env_for(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr.decode(errors="replace")
    history = compactbot(tmp_path, "history", "console:bytes")
    assert "first \ufffd\ufffd bad bytes" in history.stdout
    assert "second line" in history.stdout
    assert len(bot_lines(run.stdout.decode())) >= 2


async def test_deadletters_lists_what_could_not_be_ingested_newest_first(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "bot.db") as store:
        await store.record_dead_letter("telegram", "41", "unparseable: KeyError: 'date'", "{}")
        payload = '{"update_id": 42, "message": {"text": "' + "x" * 500 + '"}}'
        await store.record_dead_letter("telegram", "42", "failed: OSError: disk", payload)
    run = compactbot(tmp_path, "deadletters")
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("#2 telegram update 42 ") and "OSError: disk" in lines[0]
    assert lines[1].strip().startswith('{"update_id": 42') and lines[1].endswith("…")
    assert lines[2].startswith("#1 telegram update 41 ") and "KeyError" in lines[2]
    assert len(compactbot(tmp_path, "deadletters", "--limit", "1").stdout.splitlines()) == 2

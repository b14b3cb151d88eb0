"""SQLite files are private to the bot's user, and two processes can open a fresh store at once."""

from __future__ import annotations

import asyncio
import stat
from pathlib import Path

import aiosqlite
import pytest

from compactbot.bot.store import SqliteStore
from compactbot.bot.store.sqlite.schema import migrate as migrations_module
from compactbot.bot.store.sqlite.schema.migrate import schema_version
from compactbot.bot.store.sqlite.schema.migrations import LATEST_VERSION
from tests.store.factories import user


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_data_directory_is_0700_and_every_database_file_0600(tmp_path: Path) -> None:
    path = tmp_path / "data" / "bot.db"
    async with SqliteStore(path) as store:
        session = await store.active_session("console:perm")
        await store.append_messages(session.id, [user("kept private")])
        files = {p.name: _mode(p) for p in path.parent.iterdir()}

    assert _mode(path.parent) == 0o700
    assert {"bot.db", "bot.db-wal", "bot.db-shm"} <= set(files)
    assert set(files.values()) == {0o600}


async def test_a_database_created_0644_by_an_older_version_is_made_0600(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with SqliteStore(path):
        pass
    path.chmod(0o644)

    async with SqliteStore(path):
        pass

    assert _mode(path) == 0o600


async def test_two_openings_of_a_fresh_store_both_migrate_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both read version 0 before either applies a migration: the race of two processes."""
    both_read = asyncio.Barrier(2)
    detect = migrations_module.detect_fts_tokenizer

    async def after_both_read(conn: aiosqlite.Connection) -> str:
        await both_read.wait()  # apply_migrations has read the version by now
        return await detect(conn)

    monkeypatch.setattr(migrations_module, "detect_fts_tokenizer", after_both_read)
    path = tmp_path / "fresh.db"
    first, second = SqliteStore(path), SqliteStore(path)

    async with asyncio.timeout(30):
        await asyncio.gather(first.open(), second.open())
    try:
        session = await second.active_session("console:race")
        await first.append_messages(session.id, [user("after the race")])
        assert [m.text for m in await second.load_active(session.id)] == ["[alice] after the race"]
    finally:
        await first.close()
        await second.close()
    async with aiosqlite.connect(path) as conn:
        assert await schema_version(conn) == LATEST_VERSION
        found = await conn.execute_fetchall("SELECT count(*) FROM schema_version")
    assert next(iter(found))[0] == len(migrations_module.MIGRATIONS)

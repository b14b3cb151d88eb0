"""Schema migrations: an older database is upgraded in place without losing rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite
import pytest

from compactbot.bot.store import NewMessage, SqliteStore, StoreError, open_store
from compactbot.bot.store.sqlite.schema.migrate import apply_migrations, schema_version
from compactbot.bot.store.sqlite.schema.migrations import LATEST_VERSION, MIGRATIONS
from compactbot.compression.message_hints import message_hints
from tests.store.factories import user

NEW = {"role": "user", "content": "[alice] stored after the upgrade"}


async def _indexes(path: Path) -> set[str]:
    async with aiosqlite.connect(path) as conn:
        found = await conn.execute_fetchall("SELECT name FROM sqlite_master WHERE type = 'index'")
    return {row[0] for row in found}


async def test_database_at_version_one_is_migrated_without_loss(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        assert await apply_migrations(conn, up_to=1) == 1
        await conn.execute(
            "INSERT INTO chats(key, platform, created_at) VALUES ('console:old', 'console', 1)"
        )
        await conn.execute(
            "INSERT INTO sessions(chat_key, started_at, last_activity_at, active_tokens,"
            " active_messages) VALUES ('console:old', 1, 1, 9, 1)"
        )
        await conn.execute(
            "INSERT INTO messages(session_id, seq, role, content, tokens, created_at)"
            " VALUES (1, 1, 'user', 'written by version one', 9, 1)"
        )
    assert "messages_session_active" not in await _indexes(path)

    async with SqliteStore(path) as store:
        [session] = await store.list_sessions("console:old")
        messages = await store.load_active(session.id)
        hits = await store.search("console:old", "version one")

    assert [m.text for m in messages] == ["written by version one"]
    assert (session.active_tokens, session.active_messages) == (9, 1)
    assert len(hits) == 1
    assert {"messages_session_active", "usage_day"} <= await _indexes(path)
    async with aiosqlite.connect(path) as conn:
        assert await schema_version(conn) == LATEST_VERSION


async def test_rows_from_before_migration_11_have_unknown_hints(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        assert await apply_migrations(conn, up_to=10) == 10
        await conn.execute(
            "INSERT INTO chats(key, platform, created_at) VALUES ('console:old', 'console', 1)"
        )
        await conn.execute(
            "INSERT INTO sessions(chat_key, started_at, last_activity_at, active_tokens,"
            " active_messages) VALUES ('console:old', 1, 1, 9, 1)"
        )
        await conn.execute(
            "INSERT INTO messages(session_id, seq, role, content, tokens, created_at)"
            " VALUES (1, 1, 'user', 'written by version ten', 9, 1)"
        )

    async with SqliteStore(path) as store:
        [session] = await store.list_sessions("console:old")
        await store.append_messages(session.id, [NewMessage.from_openai(NEW, 5)])
        old, new = await store.load_active(session.id)

    assert (old.text, old.hints) == ("written by version ten", None)
    assert new.hints == message_hints(NEW)


async def test_memory_entries_from_before_migration_16_have_no_author_ids(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        assert await apply_migrations(conn, up_to=15) == 15
        await conn.execute(
            "INSERT INTO chats(key, platform, created_at) VALUES ('console:old', 'console', 1)"
        )
        await conn.execute(
            "INSERT INTO sessions(chat_key, started_at, last_activity_at, active_tokens,"
            " active_messages) VALUES ('console:old', 1, 1, 0, 0)"
        )
        await conn.execute(
            "INSERT INTO memory_entries(session_id, entry_id, kind, text, speaker, sources)"
            " VALUES (1, 1, 'rule', 'No deploys on Fridays.', 'Alice', '[\"7\"]')"
        )

    async with SqliteStore(path) as store:
        [session] = await store.list_sessions("console:old")
        [entry] = (await store.load_memory(session.id)).entries

    assert (entry.text, entry.speaker, entry.sources) == ("No deploys on Fridays.", "Alice", ("7",))
    assert entry.author_ids == ()


async def test_members_rows_from_before_migration_17_are_admins_only_in_private_chats(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        assert await apply_migrations(conn, up_to=16) == 16
        for session, (key, is_group) in enumerate((("tg:private", 0), ("tg:group", 1)), 1):
            await conn.execute(
                "INSERT INTO chats(key, platform, is_group, created_at) VALUES (?, 'tg', ?, 1)",
                (key, is_group),
            )
            await conn.execute(
                "INSERT INTO sessions(chat_key, started_at, last_activity_at, active_tokens,"
                " active_messages) VALUES (?, 1, 1, 9, 1)",
                (key,),
            )
            await conn.execute(
                "INSERT INTO messages(session_id, seq, role, author_id, content, tokens,"
                " created_at) VALUES (?, 1, 'user', '7', 'Rule: no spoilers.', 9, 1)",
                (session,),
            )

    async with SqliteStore(path) as store:
        private = await store.load_active((await store.list_sessions("tg:private"))[0].id)
        group = await store.load_active((await store.list_sessions("tg:group"))[0].id)

    assert [m.author_admin for m in private] == [True]
    assert [m.author_admin for m in group] == [None]


async def test_reopening_a_current_database_applies_nothing_twice(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    async with SqliteStore(path) as store:
        session = await store.active_session("console:room")
        await store.append_messages(session.id, [user("kept")])

    async with SqliteStore(path) as store:
        assert [m.text for m in await store.load_active(session.id)] == ["[alice] kept"]
    async with aiosqlite.connect(path) as conn:
        found = await conn.execute_fetchall("SELECT version FROM schema_version ORDER BY version")
    assert [row[0] for row in found] == [m.version for m in MIGRATIONS]


async def test_open_and_close_are_idempotent(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "nested" / "dir" / "store.db")
    await store.open()
    await store.open()
    await store.active_session("console:room")
    await store.close()
    await store.close()


@pytest.mark.skipif(sqlite3.sqlite_version_info < (3, 34), reason="trigram needs SQLite 3.34")
async def test_new_database_uses_trigram_tokenizer_on_this_sqlite(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "store.db") as store:
        assert store.fts_tokenizer == "trigram"


async def test_open_store_accepts_paths_and_sqlite_urls(tmp_path: Path) -> None:
    for target in (tmp_path / "a.db", f"sqlite:///{tmp_path}/b.db", "sqlite::memory:"):
        store = await open_store(target)
        try:
            assert (await store.active_session("console:room")).id == 1
        finally:
            await store.close()


async def test_open_store_refuses_unknown_schemes() -> None:
    with pytest.raises(StoreError, match="'mysql'"):
        await open_store("mysql://db/compactbot")

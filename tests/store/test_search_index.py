"""SQLite's full-text index is filled behind the writer: search finds every committed row,
whether the indexer has reached it yet or not, and edits and deletes keep the two in step."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest

from compactbot.bot.store import SqliteStore
from compactbot.bot.store.base import IngestItem
from compactbot.bot.store.sqlite.schema.migrate import apply_migrations
from tests.store.factories import user

NEVER_QUIET = 3_600.0  # the indexer waits for a quiet moment that never comes in a test


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "s.db", index_quiet_seconds=NEVER_QUIET) as opened:
        yield opened


async def texts(store: SqliteStore, query: str) -> list[str]:
    return [hit.text for hit in await store.search("console:room", query)]


async def test_a_row_is_found_before_and_after_the_indexer_reaches_it(store: SqliteStore) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user("the deploy key rotates weekly")])
    await store.ingest([IngestItem("console", "u1", "console:room", None, user("rotates at noon"))])

    before = await texts(store, "rotates")
    assert await store.index_pending() == 2  # neither row was in the index
    after = await texts(store, "rotates")

    expected = ["[alice] rotates at noon", "[alice] the deploy key rotates weekly"]
    assert before == after == expected
    assert await store.index_pending() == 0


async def test_indexed_and_unindexed_rows_are_found_together_newest_first(
    store: SqliteStore,
) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user("lunch at one")])
    await store.index_pending()
    await store.append_messages(session.id, [user("lunch moved to two")])

    assert await texts(store, "lunch") == ["[alice] lunch moved to two", "[alice] lunch at one"]


async def test_an_edit_before_indexing_is_indexed_with_its_new_text(store: SqliteStore) -> None:
    session = await store.active_session("console:room")
    (row,) = await store.append_messages(session.id, [user("meet at the harbour")])
    await store.set_message_content(row, "[alice] meet at the station", 5)
    assert await store.index_pending() == 1

    assert await texts(store, "harbour") == []
    assert await texts(store, "station") == ["[alice] meet at the station"]


async def test_an_edit_after_indexing_replaces_the_indexed_text(store: SqliteStore) -> None:
    session = await store.active_session("console:room")
    (row,) = await store.append_messages(session.id, [user("meet at the harbour")])
    await store.index_pending()
    await store.set_message_content(row, "[alice] meet at the station", 5)

    assert await texts(store, "harbour") == []
    assert await texts(store, "station") == ["[alice] meet at the station"]
    assert await store.index_pending() == 0


async def indexed_by_itself(store: SqliteStore) -> bool:
    """Whether the background indexer reaches every row within a generous deadline."""
    for _ in range(1_000):  # a deadline, not a race: it needs a few event-loop turns
        if not await store._db.fetchone(
            "SELECT 1 FROM messages WHERE id > (SELECT upto FROM fts_indexed)"
        ):
            return True
        await asyncio.sleep(0.01)
    return False


async def test_the_indexer_catches_up_by_itself_once_writes_pause(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db", index_quiet_seconds=0.0) as store:
        session = await store.active_session("console:room")
        await store.append_messages(session.id, [user(f"note {i}") for i in range(300)])
        assert await indexed_by_itself(store)
        assert len(await store.search("console:room", "note", limit=50)) == 50


async def test_rows_left_unindexed_by_a_closed_store_are_found_and_indexed_on_reopen(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "s.db", index_quiet_seconds=NEVER_QUIET) as store:
        session = await store.active_session("console:room")
        await store.append_messages(session.id, [user("left behind")])
    async with SqliteStore(tmp_path / "s.db", read_only=True) as reader:
        assert [h.text for h in await reader.search("console:room", "behind")] == [
            "[alice] left behind"
        ]
    async with SqliteStore(tmp_path / "s.db", index_quiet_seconds=NEVER_QUIET) as store:
        # The start-up pass runs at once, without waiting for a quiet moment.
        assert await indexed_by_itself(store)
        assert await texts(store, "behind") == ["[alice] left behind"]


async def test_a_few_rows_wait_for_more_before_taking_a_transaction(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "s.db", index_quiet_seconds=0.0) as store:
        session = await store.active_session("console:room")
        await store.append_messages(session.id, [user(f"note {i}") for i in range(3)])
        for _ in range(20):  # however long it is quiet, three rows are not worth indexing alone
            await asyncio.sleep(0.005)

        assert await store.index_pending() == 3


async def test_rows_indexed_before_migration_ten_count_as_indexed(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    async with aiosqlite.connect(path, isolation_level=None) as conn:
        await apply_migrations(conn, up_to=7)  # the insert trigger indexes every row
        await conn.execute(
            "INSERT INTO chats(key, platform, created_at) VALUES ('console:room', 'console', 1)"
        )
        await conn.execute(
            "INSERT INTO sessions(chat_key, started_at, last_activity_at) VALUES"
            " ('console:room', 1, 1)"
        )
        await conn.execute(
            "INSERT INTO messages(session_id, seq, role, content, tokens, created_at)"
            " VALUES (1, 1, 'user', 'indexed by the old trigger', 9, 1)"
        )

    async with SqliteStore(path, index_quiet_seconds=NEVER_QUIET) as store:
        assert await store.index_pending() == 0  # indexing it again would duplicate it
        await store.set_message_content(1, "edited after the upgrade", 4)

        assert await texts(store, "old trigger") == []
        assert await texts(store, "after the upgrade") == ["edited after the upgrade"]

"""`load_appended`: the rows after a known one, or None once a compaction changed the version."""

from __future__ import annotations

import pytest

from compactbot.bot.store import SessionNotFound
from compactbot.bot.store.backends import Store
from tests.store.factories import summary, user


async def test_rows_after_the_given_id_in_transcript_order(store: Store) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user(f"m{n}") for n in range(4)])
    appended = await store.load_appended(session.id, ids[1], session.version)
    assert appended is not None
    assert [m.id for m in appended] == ids[2:]
    assert appended == (await store.load_active(session.id))[2:]
    assert await store.load_appended(session.id, ids[-1], session.version) == []


async def test_a_compaction_since_makes_it_none(store: Store) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user(f"m{n}") for n in range(4)])
    commit = await store.archive_and_compact(session, [summary("S")], ids[1])
    assert commit is not None
    assert await store.load_appended(session.id, ids[3], session.version) is None
    after = await store.load_appended(session.id, 0, commit.version)
    assert after is not None
    # Transcript order, not id order: the summary (a newer id) comes before the survivors.
    assert [m.id for m in after] == [*commit.inserted_ids, ids[2], ids[3]]


async def test_an_unknown_session_raises(store: Store) -> None:
    with pytest.raises(SessionNotFound):
        await store.load_appended(999, 0, 0)

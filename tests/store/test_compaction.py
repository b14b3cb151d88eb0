"""Fenced compaction: totals, ordering, and the version fence under concurrency."""

from __future__ import annotations

import asyncio

from compactbot.bot.store.backends import Store
from compactbot.compression.memory import Memory, MemoryEntry
from tests.store.factories import assistant, summary, user


async def test_append_updates_running_totals_in_the_same_call(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user("hi", 7), assistant("hello", 11)])

    after = await store.get_session(session.id)

    assert (after.active_tokens, after.active_messages) == (18, 2)
    assert await store.recount(session.id) == (18, 2)


async def test_message_after_watermark_survives_compaction_after_compacted_set(
    store: Store,
) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user(f"m{i}") for i in range(6)])
    watermark = ids[-1]
    # Arrives while the summary is being written.
    [late_id] = await store.append_messages(session.id, [user("late arrival", 3)])

    commit = await store.archive_and_compact(session, [summary("SUMMARY"), user("m5")], watermark)

    assert commit is not None
    active = await store.load_active(session.id)
    assert [m.text for m in active] == ["SUMMARY", "[alice] m5", "[alice] late arrival"]
    assert active[-1].id == late_id
    assert (commit.archived, commit.inserted) == (6, 2)
    assert (commit.active_tokens, commit.active_messages) == (20 + 5 + 3, 3)
    assert await store.recount(session.id) == (commit.active_tokens, commit.active_messages)


async def test_later_appends_follow_the_survivors(store: Store) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user("a"), user("b")])
    await store.append_messages(session.id, [user("during")])
    await store.archive_and_compact(session, [summary("S")], ids[-1])

    await store.append_messages(session.id, [user("after")])

    texts = [m.text for m in await store.load_active(session.id)]
    assert texts == ["S", "[alice] during", "[alice] after"]


async def test_compaction_bumps_version_and_archives_without_deleting(store: Store) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user("one"), user("two")])

    commit = await store.archive_and_compact(session, [summary("S")], ids[-1])

    assert commit is not None and commit.version == session.version + 1
    history = await store.load_history("console:room")
    archived = [m for m in history if not m.active]
    assert [m.text for m in archived] == ["[alice] one", "[alice] two"]
    assert all(m.compacted for m in archived)
    assert (await store.get_session(session.id)).version == commit.version


async def test_stale_snapshot_is_fenced_out_and_changes_nothing(store: Store) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user("one"), user("two")])
    assert await store.archive_and_compact(session, [summary("first")], ids[-1]) is not None
    before = await store.load_history("console:room")

    stale = await store.archive_and_compact(session, [summary("second")], ids[-1])

    assert stale is None
    assert await store.load_history("console:room") == before


async def test_concurrent_compactions_of_one_snapshot_apply_exactly_once(
    store: Store,
) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user(f"m{i}") for i in range(10)])

    results = await asyncio.gather(
        store.archive_and_compact(session, [summary("from A", 10)], ids[-1]),
        store.archive_and_compact(session, [summary("from B", 12)], ids[-1]),
    )

    applied = [r for r in results if r is not None]
    assert len(applied) == 1 and results.count(None) == 1
    active = await store.load_active(session.id)
    assert len(active) == 1 and active[0].text in {"from A", "from B"}
    after = await store.get_session(session.id)
    assert after.version == session.version + 1
    assert (after.active_tokens, after.active_messages) == await store.recount(session.id)
    assert len(await store.load_history("console:room")) == 11


async def test_second_compaction_fences_by_position_not_by_id(store: Store) -> None:
    """Compacted rows get higher ids than the survivors after them; the fence must follow order."""
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user(f"m{i}") for i in range(4)])
    [survivor] = await store.append_messages(session.id, [user("survivor")])
    first = await store.archive_and_compact(session, [summary("S1")], ids[-1])
    assert first is not None and first.inserted_ids[-1] > survivor
    [late] = await store.append_messages(session.id, [user("late")])

    again = await store.get_session(session.id)
    second = await store.archive_and_compact(again, [summary("S2")], survivor)

    assert second is not None
    assert [m.text for m in await store.load_active(session.id)] == ["S2", "[alice] late"]
    assert (await store.load_active(session.id))[-1].id == late
    assert await store.count_archived("console:room") == 4 + 2  # m0..m3, then S1 and survivor


async def test_the_memory_commits_with_the_compaction_and_a_fenced_out_one_writes_none(
    store: Store,
) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user("one"), user("two")])
    first = Memory(
        (
            MemoryEntry(1, "fact", "The deploy day is Tuesday.", subject="deploy day",
                        sources=(str(ids[0]),), status="superseded", superseded_by=2),
            MemoryEntry(2, "fact", "The deploy day is Thursday.", subject="deploy day",
                        sources=(str(ids[1]),), origin="extractor"),
        ),
        reread=(str(ids[0]),),
    )  # fmt: skip
    assert await store.archive_and_compact(session, [summary("first")], ids[-1], memory=first)
    assert await store.load_memory(session.id) == first

    stale = await store.archive_and_compact(session, [summary("second")], ids[-1], memory=Memory())

    assert stale is None
    assert await store.load_memory(session.id) == first
    assert [m.id for m in await store.load_messages(session.id, [ids[1], ids[0]])] == ids

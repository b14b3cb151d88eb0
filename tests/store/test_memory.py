"""The session memory (SPEC 6.11) as the store keeps it, on both backends."""

from __future__ import annotations

from dataclasses import replace

from compactbot.bot.store.backends import Store
from compactbot.compression.memory import Memory, MemoryEntry
from tests.store.conftest import SameStore
from tests.store.factories import summary, user

CHAT = "console:room"


def _memory(text: str, *reread: str) -> Memory:
    return Memory((MemoryEntry(1, "decision", text, owner="bo", due="2026-12-01"),), reread)


async def test_the_memory_is_empty_until_a_compaction_writes_it_and_keeps_its_reread_order(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(session.id, [user(f"m{i}") for i in range(3)])
    assert await store.load_memory(session.id) == Memory()
    written = _memory("Ship on Friday.", str(ids[2]), str(ids[0]), str(ids[1]), str(ids[0]))

    assert await store.archive_and_compact(session, [summary("S")], ids[-1], memory=written)

    assert await store.load_memory(session.id) == replace(written, reread=written.reread[:3])


async def test_a_later_compaction_replaces_the_memory_and_one_without_memory_keeps_it(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(session.id, [user("a"), user("b")])
    first = await store.archive_and_compact(session, [summary("S1")], ids[0], memory=_memory("x"))
    assert first is not None
    second = await store.archive_and_compact(
        replace(session, version=first.version), [summary("S2")], ids[1], memory=_memory("y")
    )
    assert second is not None
    assert await store.load_memory(session.id) == _memory("y")

    [late] = await store.append_messages(session.id, [user("c")])
    third = await store.archive_and_compact(
        replace(session, version=second.version), [summary("S3")], late
    )

    assert third is not None
    assert await store.load_memory(session.id) == _memory("y")
    other = await store.new_session(CHAT)
    assert await store.load_memory(other.id) == Memory()


async def test_an_edit_from_another_worker_fences_out_the_compaction_and_its_memory(
    store: Store, open_same_store: SameStore
) -> None:
    session = await store.active_session(CHAT)
    [mid] = await store.append_messages(
        session.id, [replace(user("deploy Tuesday"), platform_message_id="9")]
    )
    async with open_same_store(store) as other_worker:
        # The summary was written from the old text; the edit lands before the commit.
        assert await other_worker.edit_platform_message(CHAT, "9", "[alice] deploy Friday", 5)

    stale = await store.archive_and_compact(
        session, [summary("deploy Tuesday")], mid, memory=_memory("Tuesday")
    )

    assert stale is None
    assert await store.load_memory(session.id) == Memory()
    assert [m.content for m in await store.load_active(session.id)] == ["[alice] deploy Friday"]


async def test_an_entry_keeps_the_user_ids_of_its_authors(store: Store) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(session.id, [user("a"), user("b", author="alice-2")])
    entry = MemoryEntry(
        1, "rule", "No deploys on Fridays.", speaker="Alice", sources=tuple(map(str, ids)),
        author_ids=("alice", "alice-2"),
    )  # fmt: skip

    assert await store.archive_and_compact(
        session, [summary("S")], ids[-1], memory=Memory((entry,))
    )

    assert (await store.load_memory(session.id)).entries == (entry,)

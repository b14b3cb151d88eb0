"""Write transactions: a failure or a cancellation leaves nothing half-written."""

from __future__ import annotations

import asyncio

import pytest

from compactbot.bot.store import NewMessage, SessionNotFound
from compactbot.bot.store.backends import Store
from tests.store.conftest import INTEGRITY_ERRORS
from tests.store.factories import user


async def test_failed_batch_leaves_rows_and_totals_untouched(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user("kept", 4)])
    broken = NewMessage(role="user", content="x", tokens=1, kind="bogus")  # type: ignore[arg-type]

    with pytest.raises(INTEGRITY_ERRORS, match=r"(?i)check"):
        await store.append_messages(session.id, [user("lost", 9), broken])

    after = await store.get_session(session.id)
    assert (after.active_tokens, after.active_messages) == (4, 1)
    assert [m.text for m in await store.load_active(session.id)] == ["[alice] kept"]


async def test_append_to_unknown_session_raises_and_store_stays_usable(store: Store) -> None:
    with pytest.raises(SessionNotFound):
        await store.append_messages(999, [user("nowhere")])

    session = await store.active_session("console:room")
    assert len(await store.append_messages(session.id, [user("fine")])) == 1


async def test_cancelled_write_does_not_wedge_the_writer(store: Store) -> None:
    session = await store.active_session("console:room")
    batch = [user(f"m{i}") for i in range(2000)]

    task = asyncio.create_task(store.append_messages(session.id, batch))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    await store.append_messages(session.id, [user("after cancel")])
    after = await store.get_session(session.id)
    assert (after.active_tokens, after.active_messages) == await store.recount(session.id)


async def test_append_batch_writes_every_session_or_none(store: Store) -> None:
    first = await store.active_session("console:a")
    second = await store.active_session("console:b")
    broken = NewMessage(role="user", content="x", tokens=1, kind="bogus")  # type: ignore[arg-type]
    with pytest.raises(INTEGRITY_ERRORS):
        await store.append_batch([(first.id, [user("lost", 3)]), (second.id, [broken])])
    assert await store.load_active(first.id) == []
    assert (await store.get_session(first.id)).active_messages == 0

    ids = await store.append_batch(
        [(first.id, [user("a1", 3), user("a2", 4)]), (second.id, []), (first.id, [user("a3")])]
    )
    assert [len(batch) for batch in ids] == [2, 0, 1]
    assert [m.id for m in await store.load_active(first.id)] == [*ids[0], *ids[2]]
    assert await store.recount(first.id) == (12, 3)
    assert (await store.get_session(first.id)).active_tokens == 12

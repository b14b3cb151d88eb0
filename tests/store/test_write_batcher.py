"""Group commit: concurrent writes share one transaction; each caller hears back after it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from compactbot.bot.store.backends import Store
from compactbot.bot.store.write_batcher import BatchedAppends, BatcherClosed, WriteBatcher
from tests.store.factories import user


class GatedWrite:
    """A write that holds each batch until the test releases it, recording what it was given."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.committed: list[str] = []
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.fail_with: set[str] = set()

    async def __call__(self, items: Sequence[str]) -> list[str]:
        self.batches.append(list(items))
        self.started.set()
        await self.release.wait()
        if self.fail_with & set(items):
            raise ValueError("bad item")
        self.committed.extend(items)
        return [f"ok:{item}" for item in items]


async def test_calls_that_arrive_while_a_batch_commits_share_the_next_batch() -> None:
    write = GatedWrite()
    batcher = WriteBatcher(write)
    first = asyncio.create_task(batcher.submit("a"))
    await write.started.wait()
    later = [asyncio.create_task(batcher.submit(x)) for x in "bcd"]
    await asyncio.sleep(0)
    write.release.set()
    assert await asyncio.gather(first, *later) == ["ok:a", "ok:b", "ok:c", "ok:d"]
    assert write.batches == [["a"], ["b", "c", "d"]]


async def test_calls_submitted_together_go_in_one_batch() -> None:
    write = GatedWrite()
    write.release.set()
    batcher = WriteBatcher(write)
    results = await asyncio.gather(*(batcher.submit(x) for x in "xyz"))
    assert results == ["ok:x", "ok:y", "ok:z"]
    assert write.batches == [["x", "y", "z"]]


async def test_a_caller_is_answered_only_after_its_batch_committed() -> None:
    write = GatedWrite()
    batcher = WriteBatcher(write)
    task = asyncio.create_task(batcher.submit("a"))
    await write.started.wait()
    for _ in range(5):
        await asyncio.sleep(0)
    assert not task.done() and write.committed == []
    write.release.set()
    assert await task == "ok:a"
    assert write.committed == ["a"]


async def test_a_failed_batch_is_retried_singly_and_fails_only_the_bad_item() -> None:
    write = GatedWrite()
    write.release.set()
    write.fail_with = {"bad"}
    batcher = WriteBatcher(write)
    results = await asyncio.gather(
        *(batcher.submit(x) for x in ("a", "bad", "c")), return_exceptions=True
    )
    assert results[0] == "ok:a" and results[2] == "ok:c"
    assert isinstance(results[1], ValueError)
    assert write.batches == [["a", "bad", "c"], ["a"], ["bad"], ["c"]]
    assert write.committed == ["a", "c"]


async def test_a_closed_batcher_refuses_new_items_after_writing_the_queued_ones() -> None:
    write = GatedWrite()
    batcher = WriteBatcher(write)
    task = asyncio.create_task(batcher.submit("a"))
    await write.started.wait()
    closing = asyncio.create_task(batcher.close())
    await asyncio.sleep(0)
    write.release.set()
    await closing
    assert await task == "ok:a"
    with pytest.raises(BatcherClosed):
        await batcher.submit("b")


async def test_batched_appends_from_many_sessions_commit_in_one_transaction(
    store: Store,
) -> None:
    sessions = [await store.active_session(f"console:room{n}") for n in range(4)]
    appends = BatchedAppends(store)
    ids = await asyncio.gather(
        *(appends.append_messages(s.id, [user(f"hi {n}")]) for n, s in enumerate(sessions))
    )
    assert appends.batches == 1
    for n, (session, (message_id,)) in enumerate(zip(sessions, ids, strict=True)):
        [stored] = await store.load_active(session.id)
        assert (stored.id, stored.content) == (message_id, f"[alice] hi {n}")
        assert (await store.get_session(session.id)).active_messages == 1

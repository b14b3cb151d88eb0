"""The worker's turn consumer on PostgreSQL: a lost lease cancels the turn and writes nothing,
a job that lost its worker runs alone, one that keeps killing its workers ends with a notice, and
shutdown hands running jobs back."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import asdict
from typing import Any

import pytest

from compactbot.bot.events import Adapter, InboundMessage, ReplyTarget
from compactbot.bot.store import PostgresStore
from compactbot.bot.store.base import InboxEntry, IngestItem, TurnFence
from compactbot.bot.turns.answer import TURN_FAILED
from compactbot.bot.workers.durable_gateway import TurnOutcome, message_json, say_to
from compactbot.bot.workers.durable_turns import MAX_STRIKES, TurnConsumer
from tests import postgres_server
from tests.store.conftest import ManualClock
from tests.store.factories import user

LEASE = 0.3  # renewals every 0.1 s of real time; the store's own clock stands still
WAIT = 10.0
MESSAGE = InboundMessage("telegram", "-5", "7", "Alice", "@bot hi", addressed=True)


class HeldTurn:
    """Answers only when released; records how the turn ended."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.calls = 0

    async def answer_job(
        self, payload: Mapping[str, Any], adapter: Adapter, fence: TurnFence
    ) -> TurnOutcome:
        self.calls += 1
        self.started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        target = ReplyTarget.for_message(MESSAGE)
        return TurnOutcome(int(payload["session_id"]), says=[say_to(target, "answer")])


@pytest.fixture
async def pg(clock: ManualClock) -> AsyncIterator[PostgresStore]:
    server = postgres_server.require_server()
    async with (
        postgres_server.fresh_schema(server) as dsn,
        PostgresStore(dsn, clock=clock) as opened,
    ):
        yield opened


async def enqueue(store: PostgresStore, message: InboundMessage = MESSAGE) -> None:
    item = IngestItem(
        "telegram",
        message.author_id,
        message.chat_key,
        None,
        user(message.text),
        enqueue=InboxEntry(f"{message.chat_key}|", {"message": message_json(message)}),
    )
    await store.ingest([item])


def make_consumer(store: PostgresStore, turn: HeldTurn, finished: asyncio.Event) -> TurnConsumer:
    adapters: dict[str, Adapter] = {"telegram": object()}  # type: ignore[dict-item]
    return TurnConsumer(
        turn,
        store.inbox(),
        adapters,
        holder="w1",
        max_jobs=4,
        lease_seconds=LEASE,
        on_finished=finished,
    )


@contextlib.asynccontextmanager
async def consuming(store: PostgresStore, turn: HeldTurn) -> AsyncIterator[asyncio.Event]:
    """Runs a consumer; yields the event it sets after each committed job."""
    finished = asyncio.Event()
    consumer = make_consumer(store, turn, finished)
    wake = asyncio.Event()
    wake.set()
    task = asyncio.create_task(consumer.run(wake))
    try:
        yield finished
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_a_lost_lease_cancels_the_turn_and_writes_nothing(pg: PostgresStore) -> None:
    await enqueue(pg)
    turn = HeldTurn()
    async with consuming(pg, turn):
        await asyncio.wait_for(turn.started.wait(), WAIT)
        # Another worker takes the job over, as it would once the lease ran out.
        await pg._db.fetchone("UPDATE turn_inbox SET lease_until = 0 RETURNING id")
        [taken] = await pg.inbox().claim("w2", 1, 30.0, ["telegram"])
        await asyncio.wait_for(turn.cancelled.wait(), WAIT)
        turn.release.set()
        assert await pg.outbox().states() == {}
        assert await pg.inbox().finish(taken, says=[])


async def test_a_job_that_keeps_killing_workers_running_it_alone_ends_with_a_notice(
    pg: PostgresStore,
) -> None:
    await enqueue(pg)
    await pg._db.fetchone(
        "UPDATE turn_inbox SET state = 'doing', holder = 'dead', lease_until = 0, alone = true,"
        f" strikes = {MAX_STRIKES - 1} RETURNING id"
    )
    turn = HeldTurn()
    async with consuming(pg, turn) as finished:
        await asyncio.wait_for(finished.wait(), WAIT)
    assert turn.calls == 0
    [row] = await pg.outbox().claim("w1", 5, 30.0, ["telegram"])
    assert row.text == TURN_FAILED
    assert row.target == asdict(ReplyTarget.for_message(MESSAGE))
    assert await pg.inbox().unfinished() == 0


async def test_a_job_that_lost_its_worker_runs_with_nothing_beside_it(pg: PostgresStore) -> None:
    await enqueue(pg)
    await pg._db.fetchone(
        "UPDATE turn_inbox SET state = 'doing', holder = 'dead', lease_until = 0 RETURNING id"
    )
    other = InboundMessage("telegram", "-6", "8", "Bob", "@bot hello", addressed=True)
    await enqueue(pg, other)
    turn = HeldTurn()
    consumer = make_consumer(pg, turn, asyncio.Event())
    assert await consumer.claim_and_start() == 1
    await asyncio.wait_for(turn.started.wait(), WAIT)
    assert await consumer.claim_and_start() == 0  # a free slot, but the survivor runs alone
    turn.release.set()
    await consumer.join()
    assert await consumer.claim_and_start() == 1
    await consumer.join()
    assert turn.calls == 2 and await pg.inbox().unfinished() == 0


async def test_shutdown_hands_a_running_job_back_at_once(pg: PostgresStore) -> None:
    await enqueue(pg)
    turn = HeldTurn()
    async with consuming(pg, turn):
        await asyncio.wait_for(turn.started.wait(), WAIT)
    assert turn.cancelled.is_set()
    [again] = await pg.inbox().claim("w2", 1, 30.0, ["telegram"])
    assert again.fence.attempts == 2


async def test_a_finished_turn_commits_its_outbox_rows(pg: PostgresStore) -> None:
    await enqueue(pg)
    turn = HeldTurn()
    turn.release.set()
    async with consuming(pg, turn) as finished:
        await asyncio.wait_for(finished.wait(), WAIT)
    assert list((await pg.outbox().states()).values()) == ["pending"]
    assert await pg.inbox().unfinished() == 0

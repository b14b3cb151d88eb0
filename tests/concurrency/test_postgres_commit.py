"""PostgreSQL's one-transaction writes across workers: crashes, lease takeover, dedup, deadlock.

Each worker is its own `PostgresStore` (its own pool) on one schema, as separate processes are.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import asyncpg
import pytest

from compactbot.bot.store import PostgresStore
from compactbot.bot.store.base import IngestItem
from tests import postgres_server
from tests.concurrency.test_compaction_commit import InjectedCrash, commit, seeded, snapshot
from tests.store.conftest import START_TIME, ManualClock
from tests.store.factories import user

LEASE_SECONDS = 300.0
# What the store's transactions run statements with.
STATEMENT_METHODS = frozenset({"execute", "executemany", "fetch", "fetchrow", "fetchval"})


@dataclass
class SteppedConnection:
    """A pooled connection that raises before statement `crash_at` and waits after `pause_after`."""

    inner: Any
    crash_at: int | None = None
    pause_after: int | None = None
    paused: asyncio.Event = field(default_factory=asyncio.Event)
    resume: asyncio.Event = field(default_factory=asyncio.Event)
    statements: int = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name not in STATEMENT_METHODS:
            return attribute

        async def run(*args: Any, **kwargs: Any) -> Any:
            if self.statements == self.crash_at:
                raise InjectedCrash(self.statements)
            self.statements += 1
            result = await attribute(*args, **kwargs)
            if self.statements == self.pause_after:
                self.paused.set()
                await self.resume.wait()
            return result

        return run


def step_next_transaction(store: PostgresStore, stepped: SteppedConnection) -> None:
    """Run the store's next transaction on `stepped` (the test's seam into that one transaction)."""
    database = store._db
    plain: Callable[[], Any] = database.transaction

    @asynccontextmanager
    async def once() -> AsyncIterator[Any]:
        del database.transaction  # back to the class's method for every later transaction
        async with plain() as conn:
            stepped.inner = conn
            yield stepped

    database.transaction = once  # type: ignore[method-assign]


@pytest.fixture
async def schema_dsn() -> AsyncIterator[str]:
    async with postgres_server.fresh_schema(postgres_server.require_server()) as dsn:
        yield dsn


async def test_crash_before_any_statement_of_the_commit_leaves_the_old_session_whole(
    clock: ManualClock,
) -> None:
    server = postgres_server.require_server()
    counting = SteppedConnection(None)
    steps: int | None = None
    after: tuple[Any, ...] | None = None
    crash_at = 0
    # Run 0 counts the statements; run n + 1 crashes before statement n, then retries.
    while steps is None or crash_at < steps:
        async with (
            postgres_server.fresh_schema(server) as dsn,
            PostgresStore(dsn, clock=clock) as store,
        ):
            session, ids = await seeded(store)
            assert await store.acquire_lock(session.id, "holder", LEASE_SECONDS)
            before = await snapshot(store, session.id)
            if steps is None:
                step_next_transaction(store, counting)
                assert await commit(store, session, ids, "holder") is not None
                steps, after = counting.statements, await snapshot(store, session.id)
                assert steps >= 8 and after[3] is None
                continue
            step_next_transaction(store, SteppedConnection(None, crash_at=crash_at))
            with pytest.raises(InjectedCrash):
                await commit(store, session, ids, "holder")
            assert await snapshot(store, session.id) == before, f"crash at statement {crash_at}"
            assert await commit(store, session, ids, "holder") is not None
            assert _without_ids(await snapshot(store, session.id)) == _without_ids(after)
        crash_at += 1


def _without_ids(snapshot: tuple[Any, ...]) -> tuple[Any, ...]:
    """A snapshot whose rows are compared by content: a rolled-back insert still uses up ids."""
    session, rows, events, holder = snapshot
    return session, [row[1:] for row in rows], events, holder


async def _waiting_on_a_lock(dsn: str, application: str) -> None:
    """Returns once a backend of `application` waits for a row lock (polled, not slept)."""
    conn = await asyncpg.connect(dsn)
    try:
        while not await conn.fetchval(  # noqa: ASYNC110 (server state: no event to await)
            "SELECT count(*) > 0 FROM pg_stat_activity"
            " WHERE application_name = $1 AND wait_event_type = 'Lock'",
            application,
        ):
            await asyncio.sleep(0.01)
    finally:
        await conn.close()


async def test_a_lease_taken_over_mid_commit_waits_for_the_commit(schema_dsn: str) -> None:
    early, late = ManualClock(), ManualClock(START_TIME + LEASE_SECONDS + 1)
    # Its own application name, so the wait below is this worker's and no other test's.
    application = f"compactbot-test-{uuid.uuid4().hex[:8]}"
    async with (
        PostgresStore(schema_dsn, clock=early) as slow,
        PostgresStore(f"{schema_dsn}&application_name={application}", clock=late) as other,
    ):
        session, ids = await seeded(slow)
        assert await slow.acquire_lock(session.id, "slow", LEASE_SECONDS)
        # The commit stops once it has checked its lease (statement 2), still in its transaction.
        stepped = SteppedConnection(None, pause_after=2)
        step_next_transaction(slow, stepped)
        committing = asyncio.create_task(commit(slow, session, ids, "slow"))
        await stepped.paused.wait()
        try:
            # By the other worker's clock the lease has expired: it tries to take the session over.
            taking = asyncio.create_task(other.acquire_lock(session.id, "other", LEASE_SECONDS))
            await asyncio.wait_for(_waiting_on_a_lock(schema_dsn, application), 10)
            assert not taking.done()  # the checked lease row is locked until the commit ends
            stepped.resume.set()
            assert await committing is not None
            assert await taking  # then the released session is the other worker's
            assert await other.lock_holder(session.id) == "other"
            assert (await other.get_session(session.id)).version == session.version + 1
        finally:
            stepped.resume.set()  # a failed assertion must not leave the commit holding its pool


async def test_two_workers_ingesting_one_redelivered_update_store_it_once(
    schema_dsn: str, clock: ManualClock
) -> None:
    async with (
        PostgresStore(schema_dsn, clock=clock) as one,
        PostgresStore(schema_dsn, clock=clock) as other,
    ):

        def item(update_id: str, text: str) -> IngestItem:
            return IngestItem("test", update_id, "test:g1", None, user(text), title="G1")

        results = await asyncio.gather(
            *(
                store.ingest([item(str(n), f"m{n}"), item("shared", "once")])
                for n, store in enumerate([one, other] * 3)
            )
        )
        shared = [batch[1] for batch in results]
        assert sum(not r.duplicate for r in shared) == 1
        session = await one.active_session("test:g1")
        texts = [m.text for m in await other.load_active(session.id)]
        assert sorted(texts) == sorted([f"[alice] m{n}" for n in range(6)] + ["[alice] once"])
        assert (await one.get_session(session.id)).active_messages == 7
        assert await other.recount(session.id) == (
            (await one.get_session(session.id)).active_tokens,
            7,
        )


async def test_batches_locking_two_chats_in_opposite_orders_both_land(
    schema_dsn: str, clock: ManualClock
) -> None:
    application = f"compactbot-test-{uuid.uuid4().hex[:8]}"
    async with (
        PostgresStore(schema_dsn, clock=clock) as one,
        PostgresStore(f"{schema_dsn}&application_name={application}", clock=clock) as other,
    ):
        for key in ("test:g1", "test:g2"):
            await one.active_session(key)

        def item(update_id: str, chat: str) -> IngestItem:
            return IngestItem("test", update_id, chat, None, user(update_id), title="G")

        # The first batch stops holding g1 (dedup, chat, session lock, max seq, insert) ...
        stepped = SteppedConnection(None, pause_after=5)
        step_next_transaction(one, stepped)
        first = asyncio.create_task(one.ingest([item("a1", "test:g1"), item("a2", "test:g2")]))
        await stepped.paused.wait()
        try:
            # ... the second takes g2, then waits for g1; the first then waits for g2: a cycle.
            second = asyncio.create_task(
                other.ingest([item("b2", "test:g2"), item("b1", "test:g1")])
            )
            await asyncio.wait_for(_waiting_on_a_lock(schema_dsn, application), 10)
            stepped.resume.set()
            results = await asyncio.gather(first, second)
        finally:
            stepped.resume.set()
        # The server aborted one whole; run again, it stored everything, once.
        assert [r.duplicate for batch in results for r in batch] == [False] * 4
        for key, texts in (("test:g1", {"a1", "b1"}), ("test:g2", {"a2", "b2"})):
            session = await one.active_session(key)
            stored = await one.load_active(session.id)
            assert {m.text.split("] ")[1] for m in stored} == texts
            assert (session.active_tokens, session.active_messages) == await one.recount(session.id)

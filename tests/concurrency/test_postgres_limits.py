"""Two workers checking one shared limit at the same instant: exactly one passes (PostgreSQL).

A third connection holds the key's row lock while both workers' checks arrive, so they are
certainly in flight together when it lets go: a check that read before it locked would let
both pass.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import asyncpg
import pytest

from compactbot.bot.store import PostgresStore
from tests import postgres_server
from tests.store.conftest import START_TIME

WAIT_DEADLINE_SECONDS = 10.0
POLL_SECONDS = 0.01
KEY = '["test:g1","bob"]'

Check = Callable[[PostgresStore], Awaitable[bool]]


@pytest.fixture
async def workers() -> AsyncIterator[tuple[str, PostgresStore, PostgresStore]]:
    async with (
        postgres_server.fresh_schema(postgres_server.require_server()) as dsn,
        PostgresStore(dsn, clock=lambda: START_TIME) as first,
        PostgresStore(dsn, clock=lambda: START_TIME) as second,
    ):
        yield dsn, first, second


async def _queued(admin: asyncpg.Connection, table: str) -> int:
    """Statements on `table` waiting for a lock (other tests' statements name other tables)."""
    return int(
        await admin.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND datname = current_database() AND query LIKE $1",
            f"% {table} %",
        )
    )


async def _race(
    dsn: str, table: str, stores: tuple[PostgresStore, ...], check: Check
) -> list[bool]:
    """Run `check` on every store while another connection holds KEY's row, then let them go."""
    blocker = await asyncpg.connect(dsn)
    admin = await asyncpg.connect(dsn)
    try:
        held = blocker.transaction()
        await held.start()
        locked = f"SELECT key FROM {table} WHERE key = $1 FOR UPDATE"
        assert await blocker.fetchval(locked, KEY) is not None
        racers = [asyncio.create_task(check(store)) for store in stores]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + WAIT_DEADLINE_SECONDS
        while await _queued(admin, table) < len(stores):
            if loop.time() > deadline:
                pytest.fail("the racing checks never queued on the row lock")
            await asyncio.sleep(POLL_SECONDS)
        await held.commit()
        return list(await asyncio.gather(*racers))
    finally:
        await blocker.close()
        await admin.close()


async def test_two_workers_racing_for_the_last_rate_slot_let_one_through(
    workers: tuple[str, PostgresStore, PostgresStore],
) -> None:
    dsn, first, second = workers
    # The key's row exists, with one hit a minute old: the window is empty.
    assert await first.rate_hit(KEY, 1, START_TIME - 60)

    results = await _race(
        dsn,
        "rate_windows",
        (first, second),
        lambda store: store.rate_hit(KEY, 1, START_TIME),
    )

    assert sorted(results) == [False, True]
    assert not await first.rate_hit(KEY, 1, START_TIME + 1)


async def test_two_workers_racing_to_say_a_notice_say_it_once(
    workers: tuple[str, PostgresStore, PostgresStore],
) -> None:
    dsn, first, second = workers
    assert await first.notice_first("rate", KEY, 60.0, START_TIME - 60)

    results = await _race(
        dsn,
        "notice_windows",
        (first, second),
        lambda store: store.notice_first("rate", KEY, 60.0, START_TIME),
    )

    assert sorted(results) == [False, True]

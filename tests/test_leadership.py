"""Leadership by advisory lock: one leader at a time, and a new one soon after the leader dies."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from compactbot.bot.workers.leadership import RETRY_SECONDS, AdvisoryLeadership
from tests import postgres_server

FAILOVER_DEADLINE_SECONDS = 10.0
SETTLE_DEADLINE_SECONDS = 5.0
POLL_SECONDS = 0.02


@pytest.fixture
async def schema_dsn() -> AsyncIterator[str]:
    async with postgres_server.fresh_schema(postgres_server.require_server()) as dsn:
        yield dsn


async def _until(condition: Callable[[], bool], deadline_seconds: float) -> None:
    """Poll `condition` until it holds; fail the test if the deadline passes first."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_seconds
    while not condition():
        if loop.time() > end:
            pytest.fail(f"condition not met within {deadline_seconds} s")
        await asyncio.sleep(POLL_SECONDS)


async def test_a_follower_leads_within_ten_seconds_of_the_leaders_connection_dying(
    schema_dsn: str,
) -> None:
    first = AdvisoryLeadership(schema_dsn)
    second = AdvisoryLeadership(schema_dsn)
    first.start()
    try:
        await asyncio.wait_for(first.leading.wait(), SETTLE_DEADLINE_SECONDS)
        second.start()
        # The second has asked at least twice and been refused: one leader at a time.
        await _until(lambda: second.attempts >= 2, SETTLE_DEADLINE_SECONDS + RETRY_SECONDS)
        assert first.is_leader and not second.is_leader
        pid = first.backend_pid
        assert pid is not None

        admin = await asyncpg.connect(schema_dsn)
        try:
            killed_at = asyncio.get_running_loop().time()
            assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
        finally:
            await admin.close()
        await asyncio.wait_for(second.leading.wait(), FAILOVER_DEADLINE_SECONDS)
        took = asyncio.get_running_loop().time() - killed_at

        assert took < FAILOVER_DEADLINE_SECONDS
        # The old leader noticed it lost its connection, and rejoins as a follower.
        await _until(lambda: not first.is_leader, SETTLE_DEADLINE_SECONDS)
        attempts = first.attempts
        await _until(lambda: first.attempts > attempts, SETTLE_DEADLINE_SECONDS + RETRY_SECONDS)
        assert second.is_leader and not first.is_leader
    finally:
        await second.stop()
        await first.stop()


async def test_a_leader_that_stops_hands_over_and_stops_leading(schema_dsn: str) -> None:
    first = AdvisoryLeadership(schema_dsn, retry_seconds=0.1)
    second = AdvisoryLeadership(schema_dsn, retry_seconds=0.1)
    first.start()
    try:
        await asyncio.wait_for(first.leading.wait(), SETTLE_DEADLINE_SECONDS)
        second.start()
        await _until(lambda: second.attempts >= 1, SETTLE_DEADLINE_SECONDS)

        await first.stop()

        assert not first.is_leader
        await asyncio.wait_for(second.leading.wait(), SETTLE_DEADLINE_SECONDS)
    finally:
        await second.stop()
        await first.stop()


async def test_leaders_of_different_names_do_not_exclude_each_other(schema_dsn: str) -> None:
    overnight = AdvisoryLeadership(schema_dsn, "overnight")
    other = AdvisoryLeadership(schema_dsn, "other-job")
    overnight.start()
    other.start()
    try:
        await asyncio.wait_for(overnight.leading.wait(), SETTLE_DEADLINE_SECONDS)
        await asyncio.wait_for(other.leading.wait(), SETTLE_DEADLINE_SECONDS)
    finally:
        await other.stop()
        await overnight.stop()


async def test_a_leader_whose_close_never_returns_still_stops_and_frees_the_lock(
    schema_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import compactbot.bot.workers.leadership as leadership

    monkeypatch.setattr(leadership, "CONNECT_TIMEOUT_SECONDS", 0.2)
    first, second = AdvisoryLeadership(schema_dsn), AdvisoryLeadership(schema_dsn)
    first.start()
    await asyncio.wait_for(first.leading.wait(), SETTLE_DEADLINE_SECONDS)
    never = asyncio.Event()

    async def close_that_hangs(conn: object) -> None:
        await asyncio.shield(never.wait())  # a server that never answers the goodbye

    # The injected fault: the campaign's closing step never finishes, even when cancelled.
    monkeypatch.setattr(leadership, "_close", close_that_hangs)
    await asyncio.wait_for(first.stop(), SETTLE_DEADLINE_SECONDS)  # returns, bounded
    second.start()
    try:
        await asyncio.wait_for(second.leading.wait(), FAILOVER_DEADLINE_SECONDS)
    finally:
        await second.stop()
        never.set()

"""Turn jobs whose worker died (PostgreSQL): each runs alone next, busy workers wait for it, and
only crashes while running alone count against it."""

from __future__ import annotations

from compactbot.bot.store import PostgresStore
from compactbot.bot.store.postgres.queue.inbox import InboxJob
from tests.store.conftest import ManualClock
from tests.store.test_turn_inbox import PLATFORMS, TTL, question, say


def _die(clock: ManualClock) -> None:
    """The holder is gone: nothing renews its leases until they run out."""
    clock.advance(TTL + 1)


async def test_a_dead_workers_jobs_each_run_alone_on_an_idle_worker(
    pg: PostgresStore, second: PostgresStore, clock: ManualClock
) -> None:
    await pg.ingest([question(f"telegram:{n}", n, f"q{n}") for n in range(3)])
    held = await pg.inbox().claim("w1", 10, TTL, PLATFORMS)
    assert [j.alone for j in held] == [False, False, False]
    _die(clock)
    inbox = second.inbox()
    [first] = await inbox.claim("w2", 10, TTL, PLATFORMS)
    assert (first.id, first.alone, first.strikes) == (held[0].id, True, 0)
    [other] = await inbox.claim("w3", 10, TTL, PLATFORMS)
    assert (other.id, other.alone) == (held[1].id, True)
    assert await inbox.finish(first, says=[say("a0")])
    [last] = await inbox.claim("w2", 10, TTL, PLATFORMS)
    assert (last.id, last.alone) == (held[2].id, True)


async def test_busy_workers_claim_nothing_new_while_a_survivor_waits(
    pg: PostgresStore, second: PostgresStore, clock: ManualClock
) -> None:
    await pg.ingest([question("telegram:1", 1, "dies with its worker")])
    await pg.inbox().claim("w1", 10, TTL, PLATFORMS)
    _die(clock)
    await pg.ingest([question("telegram:2", 2, "arrives later")])
    inbox = second.inbox()
    assert await inbox.claim("w2", 10, TTL, PLATFORMS, idle=False) == []
    [survivor] = await inbox.claim("w3", 10, TTL, PLATFORMS)
    assert survivor.payload["text"] == "dies with its worker" and survivor.alone
    [fresh] = await inbox.claim("w2", 10, TTL, PLATFORMS, idle=False)
    assert fresh.payload["text"] == "arrives later" and not fresh.alone


async def test_only_deaths_while_running_alone_are_strikes(
    pg: PostgresStore, clock: ManualClock
) -> None:
    await pg.ingest([question("telegram:1", 1, "poison?")])
    inbox = pg.inbox()
    seen: list[InboxJob] = []
    for worker in ("w1", "w2", "w3", "w4"):
        [job] = await inbox.claim(worker, 1, TTL, PLATFORMS)
        seen.append(job)
        _die(clock)
    assert [(j.alone, j.strikes) for j in seen] == [(False, 0), (True, 0), (True, 1), (True, 2)]


async def test_a_job_handed_back_at_shutdown_is_neither_alone_nor_struck(
    pg: PostgresStore, clock: ManualClock
) -> None:
    await pg.ingest([question("telegram:1", 1, "hi")])
    inbox = pg.inbox()
    [job] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    _die(clock)
    [alone] = await inbox.claim("w2", 10, TTL, PLATFORMS)
    await inbox.release(alone.fence)
    [again] = await inbox.claim("w3", 10, TTL, PLATFORMS, idle=False)
    assert (again.id, again.alone, again.strikes) == (job.id, False, 0)

"""Worker mode's view of the shared queue (/metrics, /readyz): the jobs no worker finished yet,
of the platforms this worker serves, sampled from PostgreSQL; clocks are the tests' own."""

from __future__ import annotations

import pytest

from compactbot.bot.operators.health import QUEUE_STUCK_SECONDS
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.store import PostgresStore
from compactbot.bot.workers.inbox_watch import STALE_SAMPLES, InboxWatch
from tests.store.conftest import ManualClock
from tests.store.test_turn_inbox import PLATFORMS, TTL, question

INTERVAL = 5.0


def _gauge(metrics: Metrics, name: str) -> float:
    value = metrics.registry.get_sample_value(f"compactbot_{name}")
    assert value is not None
    return value


async def test_the_backlog_counts_unfinished_jobs_of_the_workers_platforms(
    pg: PostgresStore, clock: ManualClock
) -> None:
    metrics = Metrics()
    watch_clock = ManualClock()
    watch = InboxWatch(pg.inbox(), PLATFORMS, metrics, interval=INTERVAL, clock=watch_clock)
    await pg.ingest([question("telegram:1", 1, "first")])
    clock.advance(30)
    await pg.ingest([question("telegram:1", 2, "second"), question("telegram:2", 3, "other")])
    await pg.ingest([question("discord:9", 4, "not ours")])
    clock.advance(12)
    await watch.sample()
    assert _gauge(metrics, "inbox_depth") == 3
    assert _gauge(metrics, "inbox_oldest_seconds") == pytest.approx(42)
    assert await watch.problem() is None
    # Answered jobs leave the backlog: claim both chats' oldest and finish them.
    for job in await pg.inbox().claim("w1", 10, TTL, PLATFORMS):
        assert await pg.inbox().finish(job)
    await watch.sample()
    assert _gauge(metrics, "inbox_depth") == 1
    assert _gauge(metrics, "inbox_oldest_seconds") == pytest.approx(12)


async def test_readiness_fails_when_a_job_waits_too_long_or_sampling_stops(
    pg: PostgresStore, clock: ManualClock
) -> None:
    watch_clock = ManualClock()
    watch = InboxWatch(pg.inbox(), PLATFORMS, Metrics(), interval=INTERVAL, clock=watch_clock)
    await watch.sample()
    assert await watch.problem() is None  # an empty queue is fine
    await pg.ingest([question("telegram:1", 1, "stuck")])
    clock.advance(QUEUE_STUCK_SECONDS + 1)
    await watch.sample()
    assert await watch.problem() == f"shared queue: a job has waited {QUEUE_STUCK_SECONDS + 1:.0f}s"
    watch_clock.advance(STALE_SAMPLES * INTERVAL + 1)
    problem = await watch.problem()
    assert problem is not None and problem.startswith("shared queue: not sampled for")

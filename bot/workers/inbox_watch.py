"""The shared queue's backlog in worker mode, sampled by every worker for /metrics and /readyz:
a worker's in-memory lanes hold only the jobs it claimed, not the ones no worker took yet. A
worker watches the jobs of the platforms it serves (those it could claim)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence

from compactbot.bot.operators.health import QUEUE_STUCK_SECONDS
from compactbot.bot.operators.metrics import Metrics, QueueSample
from compactbot.bot.store.postgres.queue.inbox import PostgresInbox

log = logging.getLogger(__name__)

INBOX_SAMPLE_SECONDS = 5.0
# A sample this many intervals old means the store stopped answering the watch.
STALE_SAMPLES = 3


class InboxWatch:
    """Samples the queue every `interval` seconds; a readiness probe over the last sample."""

    name = "shared queue"

    def __init__(
        self,
        inbox: PostgresInbox,
        platforms: Sequence[str],
        metrics: Metrics,
        *,
        interval: float = INBOX_SAMPLE_SECONDS,
        stuck_seconds: float = QUEUE_STUCK_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._inbox = inbox
        self._platforms = tuple(platforms)
        self._metrics = metrics
        self._interval = interval
        self._stuck = stuck_seconds
        self._clock = clock
        self._started = clock()
        self._latest: QueueSample | None = None
        self._sampled_at: float | None = None

    async def sample(self) -> QueueSample:
        depth, oldest = await self._inbox.backlog(self._platforms)
        self._latest, self._sampled_at = QueueSample(depth, oldest), self._clock()
        self._metrics.inbox_sampled(self._latest)
        return self._latest

    async def run(self) -> None:
        failing = False
        while True:
            try:
                await self.sample()
                failing = False
            except Exception as exc:  # the store's probe reports an outage; log it once here
                if not failing:
                    log.warning("shared queue: sampling failed (%s)", type(exc).__name__)
                failing = True
            await asyncio.sleep(self._interval)

    async def problem(self) -> str | None:
        last = self._sampled_at if self._sampled_at is not None else self._started
        since = self._clock() - last
        if since > STALE_SAMPLES * self._interval:
            return f"{self.name}: not sampled for {since:.0f}s"
        latest = self._latest
        if latest is not None and latest.oldest_wait_seconds > self._stuck:
            return f"{self.name}: a job has waited {latest.oldest_wait_seconds:.0f}s"
        return None

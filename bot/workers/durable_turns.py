"""The worker's side of the turn inbox: claim, keep the lease, answer, commit fenced (SPEC 15).

Up to `max_jobs` jobs run at once, at most one per chat (the claim guarantees that across
workers); a job that lost a worker before runs alone. Each has a renewal task; a renewal that
fails means another worker may own the job now, so the turn is cancelled and nothing it
produced is written. The job's last transaction (reply rows, outbox rows, done) is conditioned
on the fence, so a stale owner changes nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from compactbot.bot.events import Adapter, ReplyTarget
from compactbot.bot.store.base import TurnFence, TurnLost
from compactbot.bot.store.postgres.queue.inbox import InboxJob, PostgresInbox, say_from_json
from compactbot.bot.turns.answer import TURN_FAILED
from compactbot.bot.workers.durable_gateway import TurnOutcome, message_from_json, say_to

log = logging.getLogger(__name__)

# A job whose worker died this many times while running it alone is answered with a notice
# instead of run again. Crashes beside other jobs are not counted: a SIGKILL of a worker holding
# eight turns says nothing about seven of them (each runs alone next, where it can prove itself).
MAX_STRIKES = 2
# Finished jobs and settled replies are kept this long (for `unknown` sends to be looked into).
KEEP_DONE_SECONDS = 7 * 86_400.0
PRUNE_EVERY_SECONDS = 3_600.0


class TurnAnswerer(Protocol):
    """What runs a claimed turn (`InboxTurns`)."""

    async def answer_job(
        self, payload: Mapping[str, Any], adapter: Adapter, fence: TurnFence
    ) -> TurnOutcome: ...


class TurnConsumer:
    def __init__(
        self,
        gateway: TurnAnswerer,
        inbox: PostgresInbox,
        adapters: Mapping[str, Adapter],
        *,
        holder: str,
        max_jobs: int,
        lease_seconds: float,
        on_finished: asyncio.Event | None = None,
    ) -> None:
        self._gateway = gateway
        self._inbox = inbox
        self._adapters = adapters
        self._holder = holder
        self._max_jobs = max_jobs
        self._lease_seconds = lease_seconds
        self._on_finished = on_finished
        self._running: dict[int, tuple[InboxJob, asyncio.Task[None]]] = {}
        self._slot_freed = asyncio.Event()

    @property
    def running(self) -> int:
        return len(self._running)

    async def run(self, wake: asyncio.Event) -> None:
        """Claim and start jobs whenever woken or a slot frees up, until cancelled."""
        loop = asyncio.get_running_loop()
        next_prune = loop.time()
        try:
            while True:
                wake.clear()
                self._slot_freed.clear()
                try:
                    await self.claim_and_start()
                    if loop.time() >= next_prune:
                        next_prune = loop.time() + PRUNE_EVERY_SECONDS
                        await self._inbox.prune(KEEP_DONE_SECONDS)
                except Exception:
                    log.exception("claiming turns failed; trying again on the next wake-up")
                waiters = {asyncio.ensure_future(e.wait()) for e in (wake, self._slot_freed)}
                try:
                    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for waiter in waiters:
                        waiter.cancel()
        finally:
            await self._hand_back()

    async def join(self) -> None:
        """Wait for the jobs running now (tests, and callers driving `claim_and_start`)."""
        await asyncio.gather(*(task for _job, task in list(self._running.values())))

    async def claim_and_start(self) -> int:
        if any(job.alone for job, _task in self._running.values()):
            return 0
        free = self._max_jobs - len(self._running)
        jobs = await self._inbox.claim(
            self._holder,
            free,
            self._lease_seconds,
            list(self._adapters),
            idle=not self._running,
        )
        for job in jobs:
            task = asyncio.create_task(self._work(job), name=f"turn-job-{job.id}")
            self._running[job.id] = (job, task)
        return len(jobs)

    async def _work(self, job: InboxJob) -> None:
        if job.alone:
            log.warning("turn job %d lost its worker; running it alone", job.id)
        turn = asyncio.current_task()
        assert turn is not None
        renewer = asyncio.create_task(self._keep_lease(job, turn))
        try:
            await self._do(job)
        except asyncio.CancelledError:
            if not renewer.done():
                raise  # shutdown: `_hand_back` releases the job
            log.warning("turn job %d lost its lease; another worker takes it over", job.id)
        except TurnLost:
            log.warning("turn job %d was taken over mid-turn; its writes stopped", job.id)
        except Exception:
            log.exception("turn job %d failed; it is retried after its lease", job.id)
        finally:
            renewer.cancel()
            self._running.pop(job.id, None)
            self._slot_freed.set()

    async def _do(self, job: InboxJob) -> None:
        adapter = self._adapters[job.chat_key.split(":", 1)[0]]
        if job.kind == "send":
            committed = await self._inbox.finish(job, says=[say_from_json(job.payload)])
        elif job.strikes >= MAX_STRIKES:
            log.error("turn job %d killed %d workers; answering with a notice", job.id, job.strikes)
            target = ReplyTarget.for_message(message_from_json(job.payload["message"]))
            committed = await self._inbox.finish(job, says=[say_to(target, TURN_FAILED)])
        else:
            outcome = await self._gateway.answer_job(job.payload, adapter, job.fence)
            committed = await self._inbox.finish(
                job, session_id=outcome.session_id, replies=outcome.replies, says=outcome.says
            )
        if not committed:
            log.warning("turn job %d was taken over; its outcome was not written", job.id)
        elif self._on_finished is not None:
            self._on_finished.set()

    async def _keep_lease(self, job: InboxJob, turn: asyncio.Task[None]) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._lease_seconds
        while True:
            await asyncio.sleep(self._lease_seconds / 3)
            try:
                if await self._inbox.renew(job.fence, self._lease_seconds):
                    deadline = loop.time() + self._lease_seconds
                    continue
            except Exception:
                log.warning("turn job %d: lease renewal failed; retrying", job.id, exc_info=True)
                if loop.time() < deadline:
                    continue
            turn.cancel()
            return

    async def _hand_back(self) -> None:
        """On shutdown: stop the running turns and release their jobs for another worker."""
        running = list(self._running.values())
        for _job, task in running:
            task.cancel()
        await asyncio.gather(*(task for _job, task in running), return_exceptions=True)
        for job, _task in running:
            with contextlib.suppress(Exception):
                await self._inbox.release(job.fence)

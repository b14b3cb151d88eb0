"""Runs the overnight job when each chat's quiet window opens (SPEC 10).

It runs only in the worker that leads (`services.leadership`, SPEC 15): a follower waits, and
a leader that loses the lock starts nothing new, not even the next chat of a pass in progress.

Schedules are derived from the store (each chat's `overnight`, `overnight_window` and `timezone`,
with operator defaults), never kept in APScheduler's job store: they are rebuilt at start-up,
when `/config` changes a chat, and every few minutes for chats and settings that changed
elsewhere (new chats, `compactbot config set` from another process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Collection
from datetime import UTC, datetime

from apscheduler.job import Job
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger

from compactbot.bot.ingress.gateway import Gateway
from compactbot.bot.services import Services
from compactbot.scheduler.job import (
    Attempt,
    Jitter,
    Notifier,
    compact_candidates,
    run_overnight,
)
from compactbot.scheduler.selection import survey
from compactbot.scheduler.trigger import WindowStartTrigger
from compactbot.scheduler.windows import in_window, window_end

log = logging.getLogger(__name__)

# Picks up chats created since start-up and settings changed outside /config.
RESYNC_MINUTES = 10
# A chat's retention period holds whether or not it has an overnight window (SPEC 16).
RETENTION_SWEEP_MINUTES = 60
# A run missed by less than this (event loop blocked, machine suspended) still happens, once.
MISFIRE_GRACE_SECONDS = 3600
# Sessions that come due later in the window get another pass, but not more often than this.
FOLLOW_UP_MIN_SECONDS = 60.0
SECONDS_PER_DAY = 86_400

_WINDOW_JOB = "overnight:"
_FOLLOW_UP_JOB = "overnight-follow-up:"
_RESYNC_JOB = "overnight-resync"
_RETENTION_JOB = "retention-sweep"

__all__ = ["OvernightScheduler", "run_overnight"]


class OvernightScheduler:
    """One APScheduler job per chat, firing when its window opens; `start`/`stop` in the loop."""

    def __init__(
        self,
        services: Services,
        gateway: Gateway,
        *,
        notify: Notifier | None = None,
        jitter: Jitter | None = None,
    ) -> None:
        self._services = services
        self._gateway = gateway
        self._notify = notify
        self._jitter = jitter
        self._scheduler: AsyncIOScheduler | None = None
        self._limiter: asyncio.Semaphore | None = None
        self._tasks: set[asyncio.Task[list[Attempt]]] = set()
        self._running: set[str] = set()  # chats with a pass in progress
        self._leadership = services.leadership
        self._follower: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Campaign for leadership; the schedule runs whenever this process leads."""
        if self._follower is not None:
            return
        self._leadership.start()
        if self._leadership.is_leader:
            await self._resume()  # at once: a single process has its schedule on return
        self._follower = asyncio.create_task(self._follow(), name="overnight-leadership")

    async def stop(self) -> None:
        follower, self._follower = self._follower, None
        if follower is not None:
            follower.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await follower
        await self._pause()
        for task in list(self._tasks):
            task.cancel()
        # A cancelled compaction still releases its lock and records its event before returning.
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def _follow(self) -> None:
        """Schedule while leading, pause while another worker leads."""
        leadership = self._leadership
        while True:
            if self._scheduler is None:
                await leadership.leading.wait()
                try:
                    await self._resume()
                except Exception:
                    log.exception("overnight schedule not rebuilt; the resync tries again")
            else:
                await leadership.following.wait()
                log.info("overnight paused: this worker no longer leads")
                await self._pause()

    async def _resume(self) -> None:
        # One limiter for every chat's pass: `concurrency` bounds the whole process.
        if self._limiter is None:
            self._limiter = asyncio.Semaphore(self._services.config.overnight.concurrency)
        scheduler = AsyncIOScheduler(timezone=UTC, event_loop=asyncio.get_running_loop())
        scheduler.start()
        self._scheduler = scheduler
        scheduler.add_job(
            self.rebuild,
            IntervalTrigger(minutes=RESYNC_MINUTES, timezone=UTC),
            id=_RESYNC_JOB,
            coalesce=True,
            max_instances=1,
        )
        scheduler.add_job(
            self.sweep_retention,
            IntervalTrigger(minutes=RETENTION_SWEEP_MINUTES, timezone=UTC),
            id=_RETENTION_JOB,
            coalesce=True,
            max_instances=1,
        )
        self._gateway.settings_listeners.append(self.reschedule)
        await self.rebuild()
        await self.sweep_retention()

    async def _pause(self) -> None:
        """No more jobs fire; passes in progress end at their next chat (they ask the lock)."""
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is None:
            return
        if self.reschedule in self._gateway.settings_listeners:
            self._gateway.settings_listeners.remove(self.reschedule)
        scheduler.shutdown(wait=False)
        await asyncio.sleep(0)  # AsyncIOScheduler shuts down in a loop callback

    def next_run(self, chat_key: str) -> datetime | None:
        """When the chat's window job fires next (UTC); None when overnight is off for it."""
        job = self._job(_WINDOW_JOB + chat_key)
        return job.next_run_time if job is not None else None

    def next_follow_up(self, chat_key: str) -> datetime | None:
        """When the chat's next pass inside the current window runs (UTC), if one is planned."""
        job = self._job(_FOLLOW_UP_JOB + chat_key)
        return job.next_run_time if job is not None else None

    async def rebuild(self) -> None:
        """Every chat's job from the store; jobs of chats now off or gone are removed."""
        if self._scheduler is None:
            return
        scheduled = set()
        for chat in await self._services.chats.list_chats():
            if await self._schedule(chat.key):
                scheduled.add(_WINDOW_JOB + chat.key)
        for job in self._scheduler.get_jobs():
            if job.id.startswith(_WINDOW_JOB) and job.id not in scheduled:
                job.remove()

    async def reschedule(self, chat_key: str) -> None:
        """The settings listener: the chat's job, and its threads' (they inherit its settings)."""
        chats = await self._services.chats.list_chats()
        for key in [chat_key, *(c.key for c in chats if c.parent_key == chat_key)]:
            await self._schedule(key)

    async def run_pass(self, chat_key: str) -> list[Attempt]:
        """Compact the chat's due sessions; plan another pass if more come due in the window."""
        if chat_key in self._running:
            return []  # the running pass plans its own follow-up
        if not self._leadership.is_leader:
            return []
        self._running.add(chat_key)
        try:
            found = await survey(self._services, self._now(), chat_keys=(chat_key,))
            attempts = await compact_candidates(
                self._services,
                found.candidates,
                clock=self._services.clock,
                jitter=self._jitter,
                notify=self._notify,
                limiter=self._limiter,
                leading=lambda: self._leadership.is_leader,
            )
            retried = {a.candidate.session_id for a in attempts if a.report.outcome != "locked"}
            await self._plan_follow_up(chat_key, retried)
            return attempts
        except Exception:
            log.exception("overnight pass failed (chat=%s)", chat_key)
            return []
        finally:
            self._running.discard(chat_key)

    async def sweep_retention(self) -> None:
        """Forget, in every chat with a retention period, what is older than it (SPEC 16)."""
        for chat in await self._services.chats.list_chats():
            if not self._leadership.is_leader:
                return
            days = (await self._services.settings_for(chat.key)).retention_days
            if not days:
                continue
            try:
                cutoff = self._now() - days * SECONDS_PER_DAY
                forgotten = await self._services.forgetting.forget_before(chat.key, cutoff)
            except Exception:
                log.exception("retention sweep failed (chat=%s)", chat.key)
                continue
            if forgotten:
                log.info("retention forgot %d rows (chat=%s days=%d)", forgotten, chat.key, days)

    async def _fire(self, chat_key: str) -> None:
        # Our own task, not APScheduler's: stop() can cancel it and wait until it has finished.
        task = asyncio.create_task(self.run_pass(chat_key))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        await task

    async def _schedule(self, chat_key: str) -> bool:
        """(Re)build the chat's job from its settings; True when it has one."""
        scheduler = self._scheduler
        if scheduler is None:
            return False
        settings = await self._services.settings_for(chat_key)
        job_id = _WINDOW_JOB + chat_key
        job = self._job(job_id)
        if not settings.overnight or not self._services.config.compression.enabled:
            for stale in (job, self._job(_FOLLOW_UP_JOB + chat_key)):
                if stale is not None:
                    stale.remove()
            return False
        trigger = WindowStartTrigger(
            settings.overnight_window,
            settings.zone,
            jitter_seconds=self._services.config.overnight.jitter_seconds,
        )
        if job is not None and trigger.same_schedule(job.trigger):
            return True
        scheduler.add_job(
            self._fire,
            trigger,
            args=[chat_key],
            id=job_id,
            replace_existing=True,
            coalesce=True,
            misfire_grace_time=MISFIRE_GRACE_SECONDS,
            max_instances=1,
        )
        log.info("overnight scheduled chat=%s window=%s", chat_key, trigger)
        # Started (or changed) inside the window: its opening was missed, so run now.
        if in_window(settings.overnight_window, settings.zone, self._now_utc()):
            self._follow_up(chat_key, self._now_utc())
        return True

    async def _plan_follow_up(self, chat_key: str, exclude: Collection[int]) -> None:
        now = self._now()
        settings = await self._services.settings_for(chat_key)
        end = window_end(settings.overnight_window, settings.zone, self._now_utc())
        if end is None:
            return
        found = await survey(self._services, now, chat_keys=(chat_key,), exclude=exclude)
        due = now if found.candidates else found.next_due_at
        if due is None:
            return
        at = max(due, now + FOLLOW_UP_MIN_SECONDS)
        if at < end.timestamp():
            self._follow_up(chat_key, datetime.fromtimestamp(at, UTC))

    def _follow_up(self, chat_key: str, at: datetime) -> None:
        if self._scheduler is None:
            return
        self._scheduler.add_job(
            self._fire,
            DateTrigger(run_date=at, timezone=UTC),
            args=[chat_key],
            id=_FOLLOW_UP_JOB + chat_key,
            replace_existing=True,
            coalesce=True,
            misfire_grace_time=MISFIRE_GRACE_SECONDS,
            max_instances=1,
        )

    def _job(self, job_id: str) -> Job | None:
        return self._scheduler.get_job(job_id) if self._scheduler is not None else None

    def _now(self) -> float:
        return self._services.clock()

    def _now_utc(self) -> datetime:
        return datetime.fromtimestamp(self._services.clock(), UTC)

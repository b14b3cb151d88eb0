"""The overnight job (SPEC 10): compact big idle sessions while their chat is quiet.

`run_overnight` is the job itself, callable on demand (`compactbot compress --overnight`) and by
tests with their own clock; `scheduler.overnight.OvernightScheduler` runs it on time.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from compactbot.bot.compaction.report import CompactionReport
from compactbot.bot.services import Services
from compactbot.scheduler.selection import Candidate, select_sessions, still_due

log = logging.getLogger(__name__)

OVERNIGHT_TRIGGER = "overnight"
# Said in the chat when a compaction failed and the compactor had no more specific line.
ABORTED_NOTICE = (
    "⚠️ Overnight compaction of this chat's history failed. Nothing was lost; "
    "I'll retry later, or an admin can run /compress."
)

Clock = Callable[[], float]
Jitter = Callable[[], float]  # seconds to wait before the next compaction of a run
Notifier = Callable[[str, str], Awaitable[None]]  # (chat key, one line for the chat)


@dataclass(frozen=True, slots=True)
class Attempt:
    candidate: Candidate
    report: CompactionReport


def random_jitter(max_seconds: float) -> Jitter:
    return lambda: random.uniform(0.0, max_seconds)


async def run_overnight(
    services: Services,
    *,
    clock: Clock | None = None,
    ignore_window: bool = False,
    jitter: Jitter | None = None,
    notify: Notifier | None = None,
    chat_keys: Collection[str] | None = None,
    limiter: asyncio.Semaphore | None = None,
) -> list[tuple[str, CompactionReport]]:
    """Select the due sessions at `clock()` and compact them; (chat key, report) per attempt.

    `ignore_window` runs every chat with overnight on, whatever its local time (`--now`).
    `limiter` bounds compactions across concurrent runs (the scheduler shares one).
    """
    clock = clock or services.clock
    candidates = await select_sessions(
        services, clock(), ignore_window=ignore_window, chat_keys=chat_keys
    )
    attempts = await compact_candidates(
        services, candidates, clock=clock, jitter=jitter, notify=notify, limiter=limiter
    )
    return [(a.candidate.chat_key, a.report) for a in attempts]


async def compact_candidates(
    services: Services,
    candidates: Sequence[Candidate],
    *,
    clock: Clock,
    jitter: Jitter | None = None,
    notify: Notifier | None = None,
    limiter: asyncio.Semaphore | None = None,
    leading: Callable[[], bool] | None = None,
) -> list[Attempt]:
    """Compact `candidates` in order with `config.overnight.concurrency` workers.

    A candidate whose window has closed, or that became busy since the selection, is skipped:
    no new work starts after the window ends (or once `leading()` says this worker lost the
    lead), and work already running finishes.
    """
    overnight = services.config.overnight
    jitter = jitter or random_jitter(overnight.jitter_seconds)
    limiter = limiter or asyncio.Semaphore(overnight.concurrency)
    pending = deque(candidates)
    attempts: list[Attempt] = []
    started = 0

    def may_start(candidate: Candidate) -> bool:
        if leading is not None and not leading():
            log.info(
                "overnight: no longer leading; left to the leader session=%s", candidate.session_id
            )
            return False
        return _window_open(candidate, clock)

    async def work() -> None:
        nonlocal started
        while pending:
            candidate = pending.popleft()
            async with limiter:
                if not may_start(candidate):
                    continue
                # The first compaction of a run starts at once; jitter spaces the rest so the
                # summary endpoint never sees a burst of back-to-back long requests.
                if started:
                    await asyncio.sleep(max(0.0, jitter()))
                    if not may_start(candidate):
                        continue
                started += 1
                attempt = await _attempt(services, candidate, clock, notify)
            if attempt is not None:
                attempts.append(attempt)

    workers = [asyncio.create_task(work()) for _ in range(min(overnight.concurrency, len(pending)))]
    try:
        await asyncio.gather(*workers)
    finally:
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    skipped = len(candidates) - len(attempts)
    if candidates:
        log.info("overnight run: %d attempted, %d skipped", len(attempts), skipped)
    return attempts


def _window_open(candidate: Candidate, clock: Clock) -> bool:
    if candidate.window_end is None:
        return True
    if datetime.fromtimestamp(clock(), UTC) < candidate.window_end:
        return True
    log.info(
        "overnight window closed; left for the next night chat=%s session=%s",
        candidate.chat_key,
        candidate.session_id,
    )
    return False


async def _attempt(
    services: Services, candidate: Candidate, clock: Clock, notify: Notifier | None
) -> Attempt | None:
    ids = {"chat_key": candidate.chat_key, "session_id": candidate.session_id}
    try:
        if not await still_due(services, candidate, clock()):
            log.info("overnight: session no longer due chat=%s session=%s", *ids.values())
            return None
        settings = await services.settings_for(candidate.chat_key)
        report = await services.compactor.compact(
            candidate.session_id,
            trigger=OVERNIGHT_TRIGGER,
            settings=services.compaction_settings(settings),
            system_prompt=await services.system_prompt_for(candidate.chat_key),
            # Cooldown and breaker pause protect a failing endpoint; overnight respects them.
            force=False,
        )
    except Exception:
        log.exception("overnight compaction failed", extra=ids)
        return None
    log.info(
        "overnight compaction chat=%s session=%s outcome=%s messages %d->%d tokens %d->%d",
        candidate.chat_key,
        candidate.session_id,
        report.outcome,
        report.messages_before,
        report.messages_after,
        report.tokens_before,
        report.tokens_after,
    )
    if report.outcome == "aborted" and notify is not None:
        await _notify(notify, candidate.chat_key, report.notice or ABORTED_NOTICE)
    return Attempt(candidate, report)


async def _notify(notify: Notifier, chat_key: str, text: str) -> None:
    try:
        await notify(chat_key, text)
    except Exception:
        log.exception("overnight notice not delivered (chat=%s)", chat_key)

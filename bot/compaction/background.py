"""Compactions that run beside the chat: hygiene after a stored message, and /compress.

Started without waiting, one per session (the compaction lease also excludes the overnight
job and the CLI); the chat keeps being stored and answered from the current transcript.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from compactbot.bot.compaction.report import CompactionReport, ReportSink
from compactbot.bot.events import Adapter, DeliveryError, ReplyTarget
from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.base import SessionRecord
from compactbot.compression import breaker
from compactbot.compression.hygiene import hygiene_reason, needs_room

log = logging.getLogger(__name__)

HYGIENE_TRIGGER = "hygiene"
# How a compaction's notice reaches its chat: sent at once, or queued (the durable gateway).
Notice = Callable[[SessionRecord, Adapter, ReplyTarget, str], Awaitable[None]]


class BackgroundCompactions:
    """Owns the background compaction tasks: started here, awaited or cancelled on close."""

    def __init__(self, services: Services, notice: Notice | None = None) -> None:
        self._services = services
        self._notice = notice or _say
        self._tasks: set[asyncio.Task[None]] = set()
        self._sessions: set[int] = set()  # sessions with a task queued or running

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def after_store(
        self, session: SessionRecord, settings: ChatSettings, adapter: Adapter, target: ReplyTarget
    ) -> None:
        """Hygiene (SPEC 7) for every stored message; the check is O(1) on the session row."""
        services = self._services
        if not services.config.compression.enabled:
            return
        tokens = max(session.compressor.last_prompt_tokens, session.active_tokens)
        reason = hygiene_reason(
            message_count=session.active_messages,
            tokens=tokens,
            context_length=services.window_for(settings),
            threshold=settings.hygiene_threshold,
            hard_message_limit=settings.hygiene_hard_message_limit,
        )
        if reason is None:
            return
        # A paused breaker stops the automatic retries, never the room the next request needs;
        # a failing summarizer is left to its cooldown (the next turn still makes room).
        forced = False
        now = services.clock()
        if breaker.is_paused(session.compressor, now):
            window = services.compaction_settings(settings)
            if breaker.in_cooldown(session.compressor, now) or not needs_room(
                tokens=tokens, context_length=window.context_length, max_tokens=window.max_tokens
            ):
                return
            forced = True

        async def notify(report: CompactionReport) -> None:
            if reason == "hard_limit" and report.changed:
                await self._notice(
                    session,
                    adapter,
                    target,
                    f"🧹 This chat reached {report.messages_before} messages, so I compacted the "
                    f"older ones into a summary ({report.messages_before} → "
                    f"{report.messages_after}). Nothing was deleted; /status shows details.",
                )
            if report.notice:
                await self._notice(session, adapter, target, report.notice)

        self.start(
            session.id,
            session.chat_key,
            settings,
            trigger=HYGIENE_TRIGGER,
            force=forced,
            focus=None,
            on_done=notify,
            # At the hard message limit, or out of room, the compaction cannot wait for a
            # rate-limited summarizer.
            urgent=reason == "hard_limit" or forced,
        )

    def start(
        self,
        session_id: int,
        chat_key: str,
        settings: ChatSettings,
        *,
        trigger: str,
        force: bool,
        focus: str | None,
        on_done: ReportSink,
        urgent: bool = False,
    ) -> bool:
        """Start compacting; False when this session already has a compaction in flight."""
        leases = self._services.compactor.leases
        if session_id in self._sessions or leases.in_flight(session_id):
            return False
        self._sessions.add(session_id)
        task = asyncio.create_task(
            self._run(session_id, chat_key, settings, trigger, force, focus, on_done, urgent),
            name=f"compaction:{session_id}",
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _run(
        self,
        session_id: int,
        chat_key: str,
        settings: ChatSettings,
        trigger: str,
        force: bool,
        focus: str | None,
        on_done: ReportSink,
        urgent: bool,
    ) -> None:
        services = self._services
        try:
            report = await services.compactor.compact(
                session_id,
                trigger=trigger,
                settings=services.compaction_settings(settings),
                system_prompt=await services.system_prompt_for(chat_key),
                force=force,
                focus=focus,
                urgent=urgent,
            )
        except Exception:
            # Fails open: the chat goes on uncompressed and the next message may try again.
            log.exception("background compaction failed (chat=%s session=%d)", chat_key, session_id)
            report = CompactionReport("error", trigger, error="unexpected failure")
        finally:
            self._sessions.discard(session_id)
        try:
            await on_done(report)
        except Exception:
            log.exception("compaction report not delivered (chat=%s)", chat_key)

    async def join(self) -> None:
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*list(self._tasks), return_exceptions=True)


async def _say(session: SessionRecord, adapter: Adapter, target: ReplyTarget, text: str) -> None:
    try:
        await adapter.send(target, text)
    except DeliveryError:
        log.error("compaction notice could not be delivered (chat=%s)", target.chat_key)

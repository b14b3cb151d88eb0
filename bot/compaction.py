"""One compaction of a stored session: lock, compress, fenced commit, event row, notice."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.memory_inputs import memory_inputs
from bot.store.base import (
    CompactionCommit,
    CompressionEvent,
    MessageKind,
    NewMessage,
    SessionRecord,
    Store,
    StoredMessage,
)
from compression import (
    CompressionResult,
    CompressorConfig,
    ContextCompressor,
    Summarizer,
)
from compression.state import CompressorState
from compression.template import is_summary_text, unwrap_merged
from compression.tokens import TokenCounter
from compression.transcript import content_text

log = logging.getLogger(__name__)

UsageSink = Callable[[str, int, int], None]
SummarizerFactory = Callable[[UsageSink], Summarizer | None]
CHANGED_OUTCOMES = frozenset({"compressed", "fallback"})


@dataclass(frozen=True, slots=True)
class CompactionReport:
    outcome: str  # compressed | fallback | aborted | noop | locked | conflict | error
    trigger: str
    messages_before: int = 0
    messages_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str | None = None
    error: str | None = None
    notice: str | None = None  # one line for the chat, or None: routine compactions are silent
    # The compacted copy of the `upto` row, so a turn can keep answering the same message.
    new_anchor_id: int | None = None

    @property
    def changed(self) -> bool:
        return self.outcome in CHANGED_OUTCOMES


@dataclass(slots=True)
class _Usage:
    calls: list[tuple[str, int, int]] = field(default_factory=list)

    def __call__(self, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls.append((model, prompt_tokens, completion_tokens))


@dataclass(frozen=True, slots=True)
class _Job:
    trigger: str
    settings: CompressorConfig
    system_prompt: str
    force: bool
    focus: str | None
    compressor: ContextCompressor | None
    upto_id: int | None
    urgent: bool = False


def new_lock_holder(purpose: str) -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{purpose}:{uuid.uuid4().hex[:8]}"


class SessionCompactor:
    """Compacts a stored session in place; every path (turn, hygiene, overnight, /compress)."""

    def __init__(
        self,
        store: Store,
        counter: TokenCounter,
        summarizer_factory: SummarizerFactory,
        *,
        lock_ttl_seconds: float = 300.0,
        clock: Callable[[], float] = time.time,
        engine: type[ContextCompressor] | Any = ContextCompressor,
    ) -> None:
        self._engine = engine
        self._store = store
        self._counter = counter
        self._summarizer_factory = summarizer_factory
        self._lock_ttl = lock_ttl_seconds
        self._clock = clock

    def build_compressor(
        self, settings: CompressorConfig, state: CompressorState, usage: UsageSink
    ) -> ContextCompressor:
        engine: ContextCompressor = self._engine(
            settings,
            self._summarizer_factory(usage),
            state=state,
            clock=self._clock,
        )
        return engine

    async def compact(
        self,
        session_id: int,
        *,
        trigger: str,
        settings: CompressorConfig,
        system_prompt: str,
        force: bool = False,
        focus: str | None = None,
        compressor: ContextCompressor | None = None,
        upto_id: int | None = None,
        urgent: bool = False,
    ) -> CompactionReport:
        """Compress the active transcript up to row `upto_id` (default: all of it).

        Rows after it, and rows stored while the summary is written, stay live after the
        compacted set. A failure leaves the transcript exactly as it was. `urgent`: the caller
        cannot wait for a summarizer that is rate limited (SPEC 6.4).
        """
        holder = new_lock_holder(trigger)
        started = self._clock()
        session = await self._store.get_session(session_id)
        if not await self._store.acquire_lock(session_id, holder, self._lock_ttl):
            log.info(
                "compaction skipped, session locked (chat=%s session=%d)",
                session.chat_key,
                session_id,
            )
            report = CompactionReport("locked", trigger)
            await self._record_event(session, report, started)
            return report
        renewer = asyncio.create_task(self._keep_lock(session_id, holder))
        report = CompactionReport("error", trigger)
        try:
            # Re-read under the lock: the version fence must come from after we own the session.
            session = await self._store.get_session(session_id)
            report = await self._compact_locked(
                session,
                _Job(trigger, settings, system_prompt, force, focus, compressor, upto_id, urgent),
            )
            return report
        except Exception as exc:
            log.exception("compaction failed (chat=%s session=%d)", session.chat_key, session_id)
            report = CompactionReport("error", trigger, error=type(exc).__name__)
            return report
        finally:
            renewer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewer
            await self._record_event(session, report, started)
            await self._store.release_lock(session_id, holder)

    async def _compact_locked(self, session: SessionRecord, job: _Job) -> CompactionReport:
        active = considered = await self._store.load_active(session.id)
        if job.upto_id is not None:
            ids = [m.id for m in active]
            if job.upto_id in ids:
                considered = active[: ids.index(job.upto_id) + 1]
        if not considered:
            return CompactionReport("noop", job.trigger)
        pins = [p.text for p in await self._store.list_pins(session.chat_key)]
        own_usage = _Usage()
        compressor = job.compressor or self.build_compressor(
            job.settings, session.compressor, own_usage
        )
        before_state = compressor.state
        messages = [
            {"role": "system", "content": job.system_prompt},
            *(m.to_openai() for m in considered),
        ]
        memory = await self._store.load_memory(session.id)
        result = await compressor.compress(
            messages,
            focus_topic=job.focus,
            force=job.force,
            pins=pins,
            urgent=job.urgent,
            **await memory_inputs(self._store, session.id, memory, considered),
        )
        await self._record_usage(session.chat_key, own_usage)
        outcome: str = result.outcome
        after_messages = len(active)
        new_anchor = None
        if outcome in CHANGED_OUTCOMES:
            commit = await self._commit(session, result, considered, considered[-1].id)
            if commit is None:
                outcome = "conflict"
            else:
                after_messages = commit.active_messages
                new_anchor = commit.inserted_ids[-1] if commit.inserted_ids else None
        await self._store.save_compressor_state(session.id, compressor.state)
        changed = outcome in CHANGED_OUTCOMES
        return CompactionReport(
            outcome=outcome,
            trigger=job.trigger,
            messages_before=len(active),
            messages_after=after_messages,
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after if changed else result.tokens_before,
            summary=result.summary if changed else None,
            error=result.error,
            notice=self._notice(result, before_state, compressor.state),
            new_anchor_id=new_anchor,
        )

    async def _commit(
        self,
        session: SessionRecord,
        result: CompressionResult,
        originals: Sequence[StoredMessage],
        watermark: int,
    ) -> CompactionCommit | None:
        out = list(result.messages)
        new_system = None
        if out and out[0].get("role") == "system":
            new_system = content_text(out.pop(0).get("content"))
        rows = _to_rows(out, originals, self._counter)
        commit = await self._store.archive_and_compact(session, rows, watermark, result.memory)
        if commit is None:
            log.warning(
                "compaction lost the fence (chat=%s session=%d)", session.chat_key, session.id
            )
            return None
        if new_system is not None:
            await self._store.set_system_prompt(session.id, new_system)
        return commit

    def _notice(
        self, result: CompressionResult, before: CompressorState, after: CompressorState
    ) -> str | None:
        now = self._clock()
        if result.outcome == "aborted" and before.cooldown_until <= now and result.error:
            return (
                "⚠️ I couldn't compact this chat's history (the summary service failed: "
                f"{result.error}). Nothing was lost; I'll retry later, "
                "or an admin can run /compress."
            )
        if after.pause_until > now >= before.pause_until:
            minutes = max(1, round((after.pause_until - now) / 60))
            return (
                "⏸ Automatic compaction is paused for "
                f"{minutes} min because the last attempts did not shrink the context. "
                "Admins can run /compress or /new."
            )
        return None

    async def _keep_lock(self, session_id: int, holder: str) -> None:
        while True:
            await asyncio.sleep(max(1.0, self._lock_ttl / 3))
            if not await self._store.renew_lock(session_id, holder, self._lock_ttl):
                log.warning("compaction lock lost (session=%d)", session_id)
                return

    async def _record_usage(self, chat_key: str, usage: _Usage) -> None:
        for _model, prompt, completion in usage.calls:
            await self._store.add_usage(chat_key, None, "compression", prompt, completion)

    async def _record_event(
        self, session: SessionRecord, report: CompactionReport, started: float
    ) -> None:
        try:
            await self._store.record_compression_event(
                CompressionEvent(
                    chat_key=session.chat_key,
                    session_id=session.id,
                    trigger=report.trigger,
                    started_at=started,
                    ended_at=self._clock(),
                    outcome=report.outcome,
                    messages_before=report.messages_before,
                    messages_after=report.messages_after,
                    tokens_before=report.tokens_before,
                    tokens_after=report.tokens_after,
                    summary_tokens=self._counter.count_text(report.summary or ""),
                    error=report.error,
                )
            )
        except Exception:
            log.exception("could not record compression event (session=%d)", session.id)


def _fingerprint(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)


def _to_rows(
    messages: Sequence[dict[str, Any]], originals: Sequence[StoredMessage], counter: TokenCounter
) -> list[NewMessage]:
    """Stored rows for the compacted list, keeping authorship of messages carried over verbatim."""
    by_print = {_fingerprint(m.to_openai()): m for m in originals}
    rows = []
    for message in messages:
        original = by_print.get(_fingerprint(message))
        # A row carried over verbatim keeps its stored kind: a member's text that merely looks
        # like a summary never becomes one (SPEC 6.9). Only rows the compressor wrote are new.
        kind: MessageKind = original.kind if original is not None else "message"
        if original is None:
            # A summary merged into a carried message keeps that message's author.
            prior = unwrap_merged(content_text(message.get("content")))
            if prior is not None:
                original = by_print.get(_fingerprint({**message, "content": prior}))
            if is_summary_text(content_text(message.get("content"))):
                kind = "summary"
        extra: dict[str, Any] = {}
        if original is not None:
            extra = {
                "author_id": original.author_id,
                "author_name": original.author_name,
                "platform_message_id": original.platform_message_id,
                "created_at": original.created_at,
            }
        rows.append(
            NewMessage.from_openai(message, counter.count_message(message), kind=kind, **extra)
        )
    return rows

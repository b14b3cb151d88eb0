"""One compaction of a stored session: lease, compress, one-transaction commit, notice."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from compactbot.bot.compaction.inputs import compress_inputs
from compactbot.bot.compaction.memory_inputs import memory_inputs
from compactbot.bot.compaction.report import CHANGED_OUTCOMES, CompactionReport, compaction_notice
from compactbot.bot.compaction.rows import to_rows
from compactbot.bot.llm.metering import Meter, spending_for
from compactbot.bot.llm.metering import SummarizerFactory as SummarizerFactory
from compactbot.bot.llm.metering import UsageSink as UsageSink
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.store.base import CompressionEvent, NewMessage, SessionRecord, StateDelta
from compactbot.bot.store.protocols.event_store import CompressionEventStore
from compactbot.bot.store.protocols.lock_store import LockStore
from compactbot.bot.store.protocols.pin_store import PinStore
from compactbot.bot.store.protocols.session_store import SessionStore
from compactbot.bot.store.protocols.transcript_store import TranscriptReads, TranscriptWrites
from compactbot.bot.turns.exclusivity import CompactionLeases, Lease, Sleep, StoreLeases
from compactbot.compression import CompressorConfig, ContextCompressor
from compactbot.compression.memory import Memory
from compactbot.compression.state import CompressorState
from compactbot.compression.tokens import TokenCounter
from compactbot.compression.transcript import content_text

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Usage:
    calls: list[tuple[str, int, int]] = field(default_factory=list)

    def __call__(self, model: str, prompt_tokens: int, completion_tokens: int) -> None:
        self.calls.append((model, prompt_tokens, completion_tokens))

    @property
    def tokens(self) -> int:
        return sum(prompt + completion for _model, prompt, completion in self.calls)


@dataclass(frozen=True, slots=True)
class _Job:
    trigger: str
    settings: CompressorConfig
    system_prompt: str
    force: bool
    focus: str | None
    upto_id: int | None
    started: float
    urgent: bool = False


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a finished compression attempt commits: the report, rows and new state."""

    report: CompactionReport
    rows: tuple[NewMessage, ...] = ()
    watermark: int | None = None
    system_prompt: str | None = None
    state: StateDelta | None = None
    memory: Memory | None = None
    # The live rows the summary was written from: edits of them since do not fence the commit.
    span_ids: tuple[int, ...] = ()


class CompactionStore(
    SessionStore,
    TranscriptReads,
    TranscriptWrites,
    PinStore,
    CompressionEventStore,
    LockStore,
    Protocol,
):
    """What a compaction reads and commits, the event of an attempt that did not, its lease."""


class LeaseLost(Exception):
    """The compaction lease could not be renewed: the work stops before its commit."""


class SessionCompactor:
    """Compacts a stored session in place; every path (turn, hygiene, overnight, /compress).

    Optimistic: the summary is written while the chat keeps flowing (new rows land after the
    fence, edits of read rows are applied after the commit), under the session's compaction
    lease; only the commit, one transaction with compare-and-set on the session, is exclusive.
    """

    def __init__(
        self,
        store: CompactionStore,
        counter: TokenCounter,
        summarizer_factory: SummarizerFactory,
        *,
        lock_ttl_seconds: float = 300.0,
        clock: Callable[[], float] = time.time,
        engine: type[ContextCompressor] | Any = ContextCompressor,
        leases: CompactionLeases | None = None,
        sleep: Sleep = asyncio.sleep,
        metrics: Metrics | None = None,
        meter: Meter | None = None,
    ) -> None:
        self.metrics = metrics or Metrics()
        self._meter = meter
        self._engine = engine
        self._store = store
        self._counter = counter
        self._summarizer_factory = summarizer_factory
        self.leases: CompactionLeases = leases or StoreLeases(
            store, ttl_seconds=lock_ttl_seconds, sleep=sleep
        )
        self._lock_ttl = lock_ttl_seconds
        self._clock = clock
        self._sleep = sleep

    def build_compressor(
        self, settings: CompressorConfig, state: CompressorState, usage: UsageSink | None = None
    ) -> ContextCompressor:
        summarizer = self._summarizer_factory(usage) if usage is not None else None
        engine: ContextCompressor = self._engine(
            settings, summarizer, state=state, clock=self._clock
        )
        return engine

    def prompt_tokens_delta(
        self, settings: CompressorConfig, prompt_tokens: int, tripped: list[bool]
    ) -> StateDelta:
        """The provider's count applied to whatever the state is when it is written."""

        def apply(state: CompressorState) -> CompressorState:
            compressor = self.build_compressor(settings, state)
            tripped.append(
                compressor.update_from_response(
                    {"prompt_tokens": prompt_tokens, "completion_tokens": 0}
                )
            )
            return compressor.state

        return apply

    async def compact(
        self,
        session_id: int,
        *,
        trigger: str,
        settings: CompressorConfig,
        system_prompt: str,
        force: bool = False,
        focus: str | None = None,
        upto_id: int | None = None,
        urgent: bool = False,
    ) -> CompactionReport:
        """Compress the active transcript up to row `upto_id` (default: all of it).

        Rows after it, and rows stored while the summary is written, stay live after the
        compacted set. A failure leaves the transcript exactly as it was. `urgent`: the caller
        cannot wait for a summarizer that is rate limited (SPEC 6.4).
        """
        job = _Job(trigger, settings, system_prompt, force, focus, upto_id, self._clock(), urgent)
        lease = await self.leases.acquire(session_id, trigger)
        if lease is None:
            session = await self._store.get_session(session_id)
            log.info(
                "compaction skipped, session locked (chat=%s session=%d)",
                session.chat_key,
                session_id,
            )
            report = CompactionReport("locked", trigger)
            await self._record_event(session, report, job.started)
            return report
        try:
            return await self._under_lease(lease, job)
        finally:
            self.leases.finished(lease)

    async def _under_lease(self, lease: Lease, job: _Job) -> CompactionReport:
        try:
            session = await self._store.get_session(lease.session_id)
        except BaseException:
            await self._release(lease)
            raise
        lost = asyncio.Event()
        renewer = asyncio.create_task(self._keep_lease(lease, lost))
        committed = False
        try:
            outcome = await _unless_lost(self._compress(session, job), lost)
            committed, report = await self._commit(session, outcome, lease, job)
            return report
        except LeaseLost:
            report = CompactionReport("error", job.trigger, error="lease lost")
            await self._record_event(session, report, job.started)
            return report
        except Exception as exc:
            log.exception("compaction failed (chat=%s session=%d)", session.chat_key, session.id)
            report = CompactionReport("error", job.trigger, error=type(exc).__name__)
            await self._record_event(session, report, job.started)
            return report
        finally:
            renewer.cancel()
            # Whatever the renewer did, it must not surface here: the commit may be done.
            with contextlib.suppress(BaseException):
                await renewer
            if not committed:
                await self._release(lease)

    async def _compress(self, session: SessionRecord, job: _Job) -> _Outcome:
        active = considered = await self._store.load_active(session.id)
        if job.upto_id is not None:
            ids = [m.id for m in active]
            if job.upto_id in ids:
                considered = active[: ids.index(job.upto_id) + 1]
        if not considered:
            return _Outcome(CompactionReport("noop", job.trigger))
        pins = [p.text for p in await self._store.list_pins(session.chat_key)]
        own_usage = _Usage()
        before = session.compressor
        # One the budget cannot afford (it reads the span at least once) is folded by the
        # offline extractor: no model call.
        cost = sum(m.tokens for m in considered)
        affordable = self._meter is None or not await self._meter.exhausted(
            session.chat_key, None, cost=cost
        )
        compressor = self.build_compressor(job.settings, before, own_usage if affordable else None)
        # Building the inputs reads every row: off the event loop, like compress() (SPEC 17).
        messages, counts, hints = await asyncio.to_thread(
            compress_inputs, job.system_prompt, considered, self._counter
        )
        memory = await self._store.load_memory(session.id)
        with spending_for(session.chat_key, None, "compression"):
            result = await compressor.compress(
                messages,
                focus_topic=job.focus,
                force=job.force,
                pins=pins,
                token_counts=counts,
                hints=hints,
                urgent=job.urgent,
                **await memory_inputs(self._store, session.id, memory, considered),
            )
        self.metrics.compressor_changed(before, compressor.state)
        changed = result.outcome in CHANGED_OUTCOMES
        out = list(result.messages)
        new_system = None
        if changed and out and out[0].get("role") == "system":
            new_system = content_text(out.pop(0).get("content"))
        rows: tuple[NewMessage, ...] = ()
        if changed:
            rows = tuple(await asyncio.to_thread(to_rows, out, considered, self._counter))
        report = CompactionReport(
            outcome=result.outcome,
            trigger=job.trigger,
            messages_before=len(active),
            # Rows stored while the summary was written are counted by the commit, not here.
            messages_after=len(active) - len(considered) + len(rows) if changed else len(active),
            tokens_before=result.tokens_before,
            tokens_after=result.tokens_after if changed else result.tokens_before,
            summary=result.summary if changed else None,
            error=result.error,
            notice=compaction_notice(result, before, compressor.state, self._clock()),
            summary_calls=len(own_usage.calls),
            summary_cost_tokens=own_usage.tokens,
        )
        return _Outcome(
            report,
            rows=rows,
            watermark=considered[-1].id if changed else None,
            system_prompt=new_system,
            state=_changes(before, compressor.state),
            memory=result.memory if changed else None,
            span_ids=tuple(m.id for m in considered),
        )

    async def _commit(
        self, session: SessionRecord, outcome: _Outcome, lease: Lease, job: _Job
    ) -> tuple[bool, CompactionReport]:
        """(committed, report): the one transaction of the compaction, or nothing at all."""
        report = outcome.report
        if outcome.state is None:
            await self._record_event(session, report, job.started)
            return False, report
        event = self._event(session, report, job.started)
        commit = await self._store.archive_and_compact(
            session,
            outcome.rows,
            outcome.watermark,
            state=outcome.state,
            system_prompt=outcome.system_prompt,
            event=event,
            holder=lease.holder,
            memory=outcome.memory,
            span_ids=outcome.span_ids,
        )
        if commit is None:
            log.warning(
                "compaction lost the fence (chat=%s session=%d)", session.chat_key, session.id
            )
            report = report.fenced_out()
            await self._record_event(session, report, job.started)
            return False, report
        self.metrics.compaction_recorded(event)
        if outcome.watermark is None:
            return True, report
        return True, replace(
            report,
            messages_after=commit.active_messages,
            new_anchor_id=commit.inserted_ids[-1] if commit.inserted_ids else None,
        )

    async def _keep_lease(self, lease: Lease, lost: asyncio.Event) -> None:
        """Renew until cancelled; any failure (refused or raised) ends the holder's work."""
        try:
            while True:
                await self._sleep(max(1.0, lease.ttl_seconds / 3))
                if not await self.leases.renew(lease):
                    log.warning("compaction lease lost (session=%d)", lease.session_id)
                    break
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("compaction lease renewal failed (session=%d)", lease.session_id)
        lost.set()

    async def _release(self, lease: Lease) -> None:
        try:
            await self.leases.release(lease)
        except Exception:
            # It expires on its own; start-up reclaims it if this process dies first.
            log.exception("compaction lease not released (session=%d)", lease.session_id)

    def _event(
        self, session: SessionRecord, report: CompactionReport, started: float
    ) -> CompressionEvent:
        return CompressionEvent(
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
            summary_calls=report.summary_calls,
            summary_cost_tokens=report.summary_cost_tokens,
        )

    async def _record_event(
        self, session: SessionRecord, report: CompactionReport, started: float
    ) -> None:
        event = self._event(session, report, started)
        self.metrics.compaction_recorded(event)
        try:
            await self._store.record_compression_event(event)
        except Exception:
            log.exception("could not record compression event (session=%d)", session.id)


async def _unless_lost(work: Coroutine[Any, Any, _Outcome], lost: asyncio.Event) -> _Outcome:
    """Run `work`; cancel it and raise LeaseLost if the lease is lost first."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(lost.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if lost.is_set() or task.cancelled():
        raise LeaseLost
    return task.result()


def _changes(before: CompressorState, after: CompressorState) -> StateDelta | None:
    """A delta of the fields the compaction changed, so a turn's concurrent update survives."""
    changed = {
        name: getattr(after, name)
        for name in CompressorState.__dataclass_fields__
        if getattr(after, name) != getattr(before, name)
    }
    if not changed:
        return None
    return lambda current: replace(current, **changed)

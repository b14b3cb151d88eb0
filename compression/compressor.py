"""`ContextCompressor`: runs the four phases and keeps the failure and breaker state."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from compactbot.compression import breaker
from compactbot.compression.engine import ContextEngine
from compactbot.compression.fold import Span, middle_span
from compactbot.compression.memory import Memory, MessageSource
from compactbot.compression.message_counts import (
    input_counts,
    recounted,
    summarised_tokens,
)
from compactbot.compression.message_hints import checked_hints
from compactbot.compression.plan import Plan, plan_compaction
from compactbot.compression.prune import prune_tracked
from compactbot.compression.result import CompressionResult, Outcome
from compactbot.compression.saving import Saved, saving_output
from compactbot.compression.state import CompressorState
from compactbot.compression.summarizer import Summarizer
from compactbot.compression.summary_step import Summary, SummaryStep, summarise
from compactbot.compression.thresholds import CompressorConfig
from compactbot.compression.tokens import MessageCounter, TokenCounter, uncached_counter_for

# One call's own count cache: the texts it counts, freed when it returns.
CALL_COUNT_CACHE_TEXTS = 100_000

log = logging.getLogger(__name__)

Messages = Sequence[Mapping[str, Any]]


class ContextCompressor(ContextEngine):
    """The built-in engine (`compressor`): summarises the middle of a transcript."""

    def __init__(
        self,
        config: CompressorConfig,
        summarizer: Summarizer | None = None,
        *,
        state: CompressorState | None = None,
        clock: Callable[[], float] = time.time,
        memory: Memory | None = None,
        counter: MessageCounter | None = None,
    ) -> None:
        self._config = config
        self._summarizer = summarizer
        self._state = state or CompressorState()
        self._memory = memory or Memory()
        # The summary body this compressor last rendered its memory into; None while the
        # memory is the caller's (given, or empty): only a transcript carrying it gets it.
        self._memory_body: str | None = None
        self._clock = clock
        # Uncached: what a call counts itself (new texts) must not outlive the call; past the
        # input, each call of the built-in counter gets its own cache (tool names repeat).
        self._counter = counter or uncached_counter_for(config.model)
        self._call_cache = counter is None
        self._session_id: str | None = None

    @property
    def config(self) -> CompressorConfig:
        return self._config

    @property
    def state(self) -> CompressorState:
        return self._state

    @property
    def memory(self) -> Memory:
        return self._memory

    @property
    def threshold_tokens(self) -> int:
        return self._config.threshold_tokens

    @property
    def tail_token_budget(self) -> int:
        return self._config.tail_token_budget

    @property
    def max_summary_tokens(self) -> int:
        return self._config.max_summary_tokens

    @property
    def context_length(self) -> int:
        return self._config.context_length

    @property
    def compression_count(self) -> int:
        return self._state.compression_count

    @property
    def last_prompt_tokens(self) -> int:
        return self._state.last_prompt_tokens

    def on_session_start(self, session_id: str) -> None:
        self._session_id = session_id

    def on_session_end(self, session_id: str) -> None:
        self.on_session_reset()
        self._session_id = None

    def on_session_reset(self) -> None:
        self._state = CompressorState()
        self._memory, self._memory_body = Memory(), None

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """True when automatic compaction should run; the -1 sentinel means "wait"."""
        if breaker.is_paused(self._state, self._clock()):
            return False
        tokens = self._state.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens > 0 and tokens >= self.threshold_tokens

    def update_from_response(self, usage: Any) -> bool:
        """Record the provider's prompt tokens (completion tokens never count, Hermes #12026)."""
        prompt = _prompt_tokens(usage)
        now = self._clock()
        state = self._state
        was_paused = breaker.is_paused(state, now)
        if prompt > 0:
            state = replace(state, last_prompt_tokens=prompt)
            if prompt < self.threshold_tokens:
                state = breaker.record_effective(state)
            elif state.verdict_pending:
                state = breaker.record_strike(state, now)
        self._state = replace(state, verdict_pending=False)
        return not was_paused and breaker.is_paused(self._state, now)

    def has_content_to_compress(
        self,
        messages: Messages,
        *,
        token_counts: Sequence[int] | None = None,
        kinds: Sequence[str] | None = None,
    ) -> bool:
        counts = input_counts(messages, token_counts, self._counter)
        return not self._plan(messages, counts, kinds, None, self._counter).boundaries.empty

    async def compress(
        self,
        messages: Messages,
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        pins: Sequence[str] = (),
        urgent: bool = False,
        memory: Memory | None = None,
        kinds: Sequence[str] | None = None,
        sources: Sequence[MessageSource | None] | None = None,
        reread: Mapping[str, Mapping[str, Any]] | None = None,
        token_counts: Sequence[int] | None = None,
        hints: Sequence[int] | None = None,
    ) -> CompressionResult:
        """Compact `messages`; never raises for summarizer failures, never mutates the input.

        `token_counts`: one count per message (the store's); those messages are not tokenized
        again. Raises TokenCountsError when they do not fit the messages. Without them, every
        message is counted (off the event loop).
        `current_tokens` is accepted for API stability; decisions use local counts only.
        `memory` is the session's memory (default: this compressor's own); `kinds` marks the
        caller's summary rows ("summary"), so no text is taken for one by its wording;
        `sources` (one per message) are recorded in the memory; `reread` holds the archived
        messages of `memory.reread` by id, read again by the summarizer (SPEC 6.11).
        `hints`: one `message_hints()` per message, computed when the caller stored it.
        """
        # The CPU work of a compaction runs off the event loop, which it would otherwise hold
        # for as long as the transcript is long (SPEC 17: never more than 20 ms).
        counts = await asyncio.to_thread(input_counts, messages, token_counts, self._counter)
        counter = self._counter  # what the call counts besides the input: new texts
        if self._call_cache:
            counter = TokenCounter(self._config.model, cache_entries=CALL_COUNT_CACHE_TEXTS)
        hints = checked_hints(hints, len(messages))
        if memory is not None:
            self._memory, self._memory_body = memory, None
        return await self._compress(
            messages,
            counts,
            hints,
            counter,
            focus_topic,
            force,
            pins,
            urgent,
            kinds,
            sources,
            reread,
        )

    async def _compress(
        self,
        messages: Messages,
        counts: Sequence[int],
        hints: Sequence[int] | None,
        counter: MessageCounter,
        focus_topic: str | None,
        force: bool,
        pins: Sequence[str],
        urgent: bool,
        kinds: Sequence[str] | None,
        sources: Sequence[MessageSource | None] | None,
        reread: Mapping[str, Mapping[str, Any]] | None,
    ) -> CompressionResult:
        now = self._clock()
        if force:
            self._state = breaker.lift_cooldown(self._state)
        elif breaker.is_paused(self._state, now):
            return await self._unchanged(messages, counts, "noop", "breaker paused", strike=False)
        plan = await asyncio.to_thread(self._plan, messages, counts, kinds, hints, counter)
        if plan.boundaries.empty:
            return await self._unchanged(
                messages, counts, "noop", "nothing to compress", strike=True
            )
        start, end = plan.boundaries.start, plan.boundaries.end

        def cut() -> tuple[Messages, Sequence[int], Span, int]:
            pruned, changed = prune_tracked(plan.working, end, plan.hints)
            kept_changed = [i for i in changed if not start <= i < end]
            pruned_tokens = recounted(pruned, plan.tokens, kept_changed, counter)
            span = middle_span(pruned, start, end, changed, plan.origin, plan.hints, sources)
            middle = summarised_tokens(pruned, plan.tokens, start, end, changed)
            return pruned, pruned_tokens, span, middle

        pruned, pruned_tokens, span, middle_tokens = await asyncio.to_thread(cut)
        step = SummaryStep(
            plan.memory,
            plan.previous_summary,
            plan.previous_tokens,
            plan.working,
            span,
            middle_tokens,
            reread,
            focus_topic,
            tuple(pins),
            force,
            urgent,
            now,
        )
        summary, self._state = await summarise(
            step, self._config, self._summarizer, counter, self._state, self._session_id
        )
        if summary.memory is None:
            return await self._unchanged(messages, counts, "aborted", summary.error, strike=False)
        saved = await asyncio.to_thread(
            saving_output, summary, pruned, pruned_tokens, (start, end), counts, counter
        )
        if saved is None:
            return await self._unchanged(
                messages, counts, "noop", "summary not smaller", strike=True
            )
        self._memory, self._memory_body = summary.memory, saved.rendered.body
        return await asyncio.to_thread(self._completed, saved, summary, end - start, now)

    def _plan(
        self,
        messages: Messages,
        counts: Sequence[int],
        kinds: Sequence[str] | None,
        hints: Sequence[int] | None,
        counter: MessageCounter,
    ) -> Plan:
        flags = [kind == "summary" for kind in kinds] if kinds is not None else None
        return plan_compaction(
            messages, counts, flags, hints, counter, self._config, self._memory_of
        )

    def _memory_of(self, bodies: Sequence[str]) -> Memory:
        """This compressor's memory, unless it was made for a transcript that carries none of
        its summaries: then it starts empty (SPEC 6.3, Hermes #38788)."""
        mine = self._memory_body
        if mine is None or any(body.strip() == mine.strip() for body in bodies):
            return self._memory
        return Memory()

    async def _unchanged(
        self,
        messages: Messages,
        counts: Sequence[int],
        outcome: Outcome,
        error: str | None,
        *,
        strike: bool,
    ) -> CompressionResult:
        now = self._clock()
        was_paused = breaker.is_paused(self._state, now)
        if strike:
            self._state = breaker.record_strike(self._state, now)
        log.info("compaction session=%s outcome=%s reason=%s", self._session_id, outcome, error)
        before = await asyncio.to_thread(sum, counts)
        return CompressionResult(
            messages=await asyncio.to_thread(lambda: [dict(m) for m in messages]),
            summary=None,
            outcome=outcome,
            tokens_before=before,
            tokens_after=before,
            savings_pct=0.0,
            error=error,
            cooldown_until=self._cooldown_until(now),
            paused_until=self._new_pause(was_paused, now),
        )

    def _completed(
        self, saved: Saved, summary: Summary, summarised: int, now: float
    ) -> CompressionResult:
        before, after, body = saved.before, saved.after, saved.rendered.body
        savings = round(100.0 * (before - after) / before, 2) if before else 0.0
        was_paused = breaker.is_paused(self._state, now)
        state = replace(
            self._state,
            compression_count=self._state.compression_count + 1,
            previous_summary=body,
            # -1: no provider count for the shrunk transcript yet (Hermes #36718).
            last_prompt_tokens=-1,
            verdict_pending=not breaker.is_ineffective(savings),
            memory_need_tokens=summary.memory_need,
        )
        if breaker.is_ineffective(savings):
            state = breaker.record_strike(state, now)
        self._state = state
        if saved.rendered.must_show_hidden:
            log.warning(
                "compaction session=%s: %d must-show memory entries exceed the memory cap",
                self._session_id,
                saved.rendered.must_show_hidden,
            )
        log.info(
            "compaction session=%s outcome=%s messages=%d tokens=%d->%d savings=%.1f%%",
            self._session_id,
            summary.outcome,
            summarised,
            before,
            after,
            savings,
        )
        return CompressionResult(
            messages=saved.messages,
            summary=body,
            outcome=summary.outcome,
            tokens_before=before,
            tokens_after=after,
            savings_pct=savings,
            error=summary.error,
            messages_summarised=summarised,
            cooldown_until=self._cooldown_until(now),
            paused_until=self._new_pause(was_paused, now),
            memory=summary.memory,
            must_show_hidden=saved.rendered.must_show_hidden,
        )

    def _cooldown_until(self, now: float) -> float | None:
        return self._state.cooldown_until if breaker.in_cooldown(self._state, now) else None

    def _new_pause(self, was_paused: bool, now: float) -> float | None:
        paused = breaker.is_paused(self._state, now)
        return self._state.pause_until if paused and not was_paused else None


def _prompt_tokens(usage: Any) -> int:
    """Prompt tokens from an SDK usage object or a dict; 0 when absent."""
    value = usage.get("prompt_tokens") if isinstance(usage, Mapping) else None
    if value is None and usage is not None and not isinstance(usage, Mapping):
        value = getattr(usage, "prompt_tokens", None)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0

"""The summary step of one compaction: fold the span into the memory, then render it."""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.compression import breaker
from compactbot.compression.fold import Folded, Span, extract_all, fold, fold_in_cooldown
from compactbot.compression.fold_inputs import (
    build_ask,
    chars_per_token,
    legacy_memory,
    reread_span,
)
from compactbot.compression.memory import Memory
from compactbot.compression.memory_render import (
    Rendered,
    must_show_tokens,
    pins_tokens,
    render_memory,
)
from compactbot.compression.result import Outcome
from compactbot.compression.state import CompressorState
from compactbot.compression.summarizer import Summarizer
from compactbot.compression.summary_chunks import summary_view
from compactbot.compression.thresholds import CompressorConfig
from compactbot.compression.tokens import MessageCounter

# SPEC 6.9: the extractor's summary is at most 8,000 characters.
EXTRACTED_MAX_CHARS = 8_000

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SummaryStep:
    """What the summary step of one compaction reads."""

    memory: Memory
    previous_summary: str | None
    previous_tokens: int  # an upper bound: the tokens of the messages that carried it
    working: Sequence[Mapping[str, Any]]
    span: Span
    middle_tokens: int
    reread: Mapping[str, Mapping[str, Any]] | None
    focus_topic: str | None
    pins: tuple[str, ...]
    force: bool
    urgent: bool
    now: float


@dataclass(frozen=True, slots=True)
class Summary:
    """The folded memory and its rendering; `memory` None means abort."""

    outcome: Outcome
    error: str | None = None
    memory: Memory | None = None
    rendered: Rendered | None = None
    render: Callable[[int], Rendered] | None = None  # the same memory within another budget
    memory_need: int = 0  # what its must-show entries need, pins apart


async def summarise(
    step: SummaryStep,
    config: CompressorConfig,
    summarizer: Summarizer | None,
    counter: MessageCounter,
    state: CompressorState,
    session_id: str | None,
) -> tuple[Summary, CompressorState]:
    """The folded memory rendered by importance, and the breaker state after it."""
    memory = step.memory
    if not memory.entries and step.previous_summary:
        memory = legacy_memory(step.previous_summary, today_of(step.now))
    span_tokens = step.middle_tokens + (step.previous_tokens if step.previous_summary else 0)
    budget = config.summary_budget(span_tokens)
    folded, state = await _fold(step, memory, config, summarizer, state, session_id, budget)
    folded_memory = folded.memory
    if folded_memory is None:
        return Summary("aborted", folded.error), state
    extracted = summarizer is None or folded.extracted
    count = counter.count_text

    # Sized for the memory, not for the span just compacted (SPEC 6.11).
    memory_need = await asyncio.to_thread(must_show_tokens, folded_memory, count_tokens=count)
    need = memory_need + pins_tokens(step.pins, count_tokens=count)

    def render_within(max_chars: int | None) -> Callable[[int], Rendered]:
        def render(room: int) -> Rendered:
            return render_memory(
                folded_memory,
                budget_tokens=max(0, room),
                count_tokens=count,
                unavailable=summarizer is not None and folded.extracted,
                max_chars=max_chars,
                pins=step.pins,
            )

        return render

    room = config.render_budget(span_tokens, need)
    render = render_within(EXTRACTED_MAX_CHARS if extracted else None)
    rendered = await asyncio.to_thread(render, room)
    if extracted and rendered.must_show_hidden:
        # The extractor's summary keeps to 8,000 characters (SPEC 6.9) unless its must-show
        # entries need more: those are never shed; the memory cap bounds them instead.
        render = render_within(None)
        rendered = await asyncio.to_thread(render, room)
    summary = Summary(folded.outcome, folded.error, folded_memory, rendered, render, memory_need)
    return summary, state


async def _fold(
    step: SummaryStep,
    memory: Memory,
    config: CompressorConfig,
    summarizer: Summarizer | None,
    state: CompressorState,
    session_id: str | None,
    budget: int,
) -> tuple[Folded, CompressorState]:
    today = today_of(step.now)
    span = step.span
    if summarizer is None:
        # The offline extractor is the CPU work of the compaction: off the event loop.
        extracted = await asyncio.to_thread(extract_all, memory, [span], today)
        return Folded(extracted, "compressed", extracted=True), state
    cause = state.cooldown_cause
    if not step.force and breaker.in_cooldown(state, step.now):
        # A failing summarizer is not called again until its cooldown ends (Hermes #11529).
        abort = config.abort_on_summary_failure
        folded = await asyncio.to_thread(
            fold_in_cooldown, memory, span, cause, urgent=step.urgent, abort=abort, today=today
        )
        return folded, state
    # The summarizer's view, made once: it also measures the span's density.
    view = await asyncio.to_thread(summary_view, span.turns, span.hints)
    ask = build_ask(
        memory,
        step.working,
        focus_topic=step.focus_topic,
        budget_tokens=budget,
        today=today,
        pins=step.pins,
        context_length=config.context_length,
        chars_per_token=chars_per_token(view.chars, step.middle_tokens),
        language=config.language,
    )
    folded = await fold(
        summarizer,
        memory,
        reread_span(memory, step.reread),
        span,
        ask,
        urgent=step.urgent,
        abort_on_failure=config.abort_on_summary_failure,
        view=view,
    )
    if folded.cause is None:
        return folded, breaker.reset_failures(state)
    state = breaker.arm_cooldown(state, step.now, folded.cause)
    log.warning(
        "summarizer failed session=%s cause=%s streak=%d",
        session_id,
        folded.cause,
        state.failure_streak,
    )
    return folded, state


def today_of(now: float) -> dt.date:
    return dt.datetime.fromtimestamp(now, tz=dt.UTC).date()

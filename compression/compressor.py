"""`ContextCompressor`: runs the four phases and keeps the failure and breaker state."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from compression import breaker
from compression.assemble import assemble
from compression.boundaries import Boundaries, plan_boundaries
from compression.deterministic import deterministic_summary
from compression.engine import ContextEngine
from compression.handoff import take_handoffs
from compression.prune import prune
from compression.redact import redact
from compression.result import CompressionResult, Outcome
from compression.state import CompressorState, CooldownCause
from compression.summarizer import (
    Summarizer,
    SummaryAuthError,
    SummaryNetworkError,
    SummaryRequest,
)
from compression.summary_input import derive_focus, participants, summary_turns
from compression.template import ensure_pins
from compression.thresholds import CompressorConfig
from compression.tokens import counter_for

# The summarizer input must fit the summary model: the template costs about this many tokens,
# and rendering adds labels, so only 85 % of the remaining room is filled.
SUMMARY_PROMPT_OVERHEAD_TOKENS = 1_200
INPUT_SAFETY_MARGIN = 0.85
MIN_SUMMARY_INPUT_CHARS = 4_000
MAX_SUMMARY_INPUT_CHARS = 160_000

log = logging.getLogger(__name__)

# asyncio.TimeoutError is TimeoutError since 3.11; raw transport errors from any summarizer
# mean "could not reach it", which must keep the transcript (Hermes #29559).
NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    SummaryNetworkError,
    ConnectionError,
    TimeoutError,
)
ERROR_TEXT_CHARS = 200

Messages = Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class _Plan:
    working: list[dict[str, Any]]
    previous_summary: str | None
    boundaries: Boundaries


@dataclass(frozen=True, slots=True)
class _Summary:
    body: str | None
    outcome: Outcome
    error: str | None = None


class ContextCompressor(ContextEngine):
    """The built-in engine (`compressor`): summarises the middle of a transcript."""

    def __init__(
        self,
        config: CompressorConfig,
        summarizer: Summarizer | None = None,
        *,
        state: CompressorState | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._summarizer = summarizer
        self._state = state or CompressorState()
        self._clock = clock
        self._counter = counter_for(config.model)
        self._counts: dict[int, int] = {}
        self._session_id: str | None = None

    @property
    def config(self) -> CompressorConfig:
        return self._config

    @property
    def state(self) -> CompressorState:
        return self._state

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

    def has_content_to_compress(self, messages: Messages) -> bool:
        return not self._plan(messages).boundaries.empty

    async def compress(
        self,
        messages: Messages,
        *,
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
        pins: Sequence[str] = (),
    ) -> CompressionResult:
        """Compact `messages`; never raises for summarizer failures, never mutates the input.

        `current_tokens` is accepted for API stability; decisions use local counts only.
        """
        now = self._clock()
        # One count per message object per call: the plan, the middle and the output share
        # most dicts, and ids are stable while the call holds them.
        self._counts = {}
        before = self._count(messages)
        if force:
            self._state = breaker.lift_cooldown(self._state)
        elif breaker.is_paused(self._state, now):
            return self._unchanged(messages, before, "noop", "breaker paused", strike=False)
        plan = self._plan(messages)
        if plan.boundaries.empty:
            return self._unchanged(messages, before, "noop", "nothing to compress", strike=True)
        start, end = plan.boundaries.start, plan.boundaries.end
        pruned = prune(plan.working, end)
        middle = pruned[start:end]
        request = self._request(plan, middle, focus_topic, pins, now)
        summary = await self._summarise(request, force, now)
        if summary.body is None:
            return self._unchanged(messages, before, "aborted", summary.error, strike=False)
        body = ensure_pins(summary.body, tuple(pins))
        output = assemble(pruned[:start], body, pruned[end:])
        after = self._count(output)
        if after >= before:
            return self._unchanged(messages, before, "noop", "summary not smaller", strike=True)
        return self._completed(output, body, summary, before, after, end - start, now)

    def _count_one(self, message: Mapping[str, Any]) -> int:
        key = id(message)
        count = self._counts.get(key)
        if count is None:
            count = self._counts[key] = self._counter.count_message(message)
        return count

    def _count(self, messages: Sequence[Mapping[str, Any]]) -> int:
        return sum(self._count_one(m) for m in messages)

    def _plan(self, messages: Messages) -> _Plan:
        handoff = take_handoffs(messages)
        working = handoff.messages
        # A summary in the transcript means a compaction already ran, also before a restart:
        # the head decays (#11996) and that summary is the one to update. Without one, a
        # remembered summary belongs to another session and is dropped (#38788).
        boundaries = plan_boundaries(
            working,
            budget=self.tail_token_budget,
            protect_first_n=self._config.protect_first_n,
            protect_last_n=self._config.protect_last_n,
            decayed=bool(handoff.bodies),
            tokens=[self._count_one(m) for m in working],
        )
        return _Plan(working, handoff.previous_summary, boundaries)

    def _request(
        self,
        plan: _Plan,
        middle: list[dict[str, Any]],
        focus_topic: str | None,
        pins: Sequence[str],
        now: float,
    ) -> SummaryRequest:
        focus = focus_topic if focus_topic and focus_topic.strip() else derive_focus(plan.working)
        previous = redact(plan.previous_summary) if plan.previous_summary else None
        middle_tokens = self._count(middle)
        budget = self._config.summary_budget(middle_tokens)
        chars_per_token = _chars_per_token(middle, middle_tokens)
        return SummaryRequest(
            turns=summary_turns(
                middle, max_chars=self._input_chars(budget, previous, chars_per_token)
            ),
            previous_summary=previous,
            focus_topic=redact(focus) if focus else None,
            budget_tokens=budget,
            today=dt.datetime.fromtimestamp(now, tz=dt.UTC).date(),
            participants=tuple(participants(middle)),
            pins=tuple(pins),
            language=self._config.language,
        )

    def _input_chars(self, budget_tokens: int, previous: str | None, chars_per_token: float) -> int:
        """Bound the turns so prompt + previous summary + answer fit the summary model's window."""
        room = (
            self._config.context_length
            - budget_tokens
            - SUMMARY_PROMPT_OVERHEAD_TOKENS
            - (self._counter.count_text(previous) if previous else 0)
        )
        chars = int(room * chars_per_token * INPUT_SAFETY_MARGIN)
        return max(MIN_SUMMARY_INPUT_CHARS, min(MAX_SUMMARY_INPUT_CHARS, chars))

    async def _summarise(self, request: SummaryRequest, force: bool, now: float) -> _Summary:
        """The summary body and its outcome; `body` None means abort and keep the transcript."""
        if self._summarizer is None:
            return _Summary(deterministic_summary(request, unavailable=False), "compressed")
        state = self._state
        if not force and breaker.in_cooldown(state, now):
            # A failing summarizer is not called again until its cooldown ends (Hermes #11529).
            if state.cooldown_cause in ("auth", "network") or self._config.abort_on_summary_failure:
                return _Summary(
                    None, "aborted", f"summarizer cooling down ({state.cooldown_cause})"
                )
            return _Summary(deterministic_summary(request, unavailable=True), "fallback")
        cause: CooldownCause
        try:
            text = await self._summarizer.summarize(request)
        except SummaryAuthError as exc:
            cause, error = "auth", _describe(exc)
        except NETWORK_ERRORS as exc:
            cause, error = "network", _describe(exc)
        except Exception as exc:  # any other summarizer bug degrades to the deterministic summary
            cause, error = "other", _describe(exc)
        else:
            body = redact(text).strip() if isinstance(text, str) else ""
            if body:
                self._state = breaker.reset_failures(state)
                return _Summary(body, "compressed")
            # A proxy answering 200 with empty content must not wipe the middle (#11978).
            cause, error = "other", "summarizer returned an empty summary"
        self._state = breaker.arm_cooldown(state, now, cause)
        log.warning(
            "summarizer failed session=%s cause=%s streak=%d",
            self._session_id,
            cause,
            self._state.failure_streak,
        )
        if cause != "other" or self._config.abort_on_summary_failure:
            return _Summary(None, "aborted", error)
        return _Summary(deterministic_summary(request, unavailable=True), "fallback", error)

    def _unchanged(
        self,
        messages: Messages,
        before: int,
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
        return CompressionResult(
            messages=[dict(m) for m in messages],
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
        self,
        output: list[dict[str, Any]],
        body: str,
        summary: _Summary,
        before: int,
        after: int,
        summarised: int,
        now: float,
    ) -> CompressionResult:
        savings = round(100.0 * (before - after) / before, 2) if before else 0.0
        was_paused = breaker.is_paused(self._state, now)
        state = replace(
            self._state,
            compression_count=self._state.compression_count + 1,
            previous_summary=body,
            # -1: no provider count for the shrunk transcript yet (Hermes #36718).
            last_prompt_tokens=-1,
            verdict_pending=not breaker.is_ineffective(savings),
        )
        if breaker.is_ineffective(savings):
            state = breaker.record_strike(state, now)
        self._state = state
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
            messages=output,
            summary=body,
            outcome=summary.outcome,
            tokens_before=before,
            tokens_after=after,
            savings_pct=savings,
            error=summary.error,
            messages_summarised=summarised,
            cooldown_until=self._cooldown_until(now),
            paused_until=self._new_pause(was_paused, now),
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


def _describe(exc: BaseException) -> str:
    """A short error for the result; redacted because SDK errors may echo a key fragment."""
    return redact(f"{type(exc).__name__}: {exc}")[:ERROR_TEXT_CHARS]


def _chars_per_token(messages: Sequence[dict[str, Any]], tokens: int) -> float:
    """This middle's own density, so CJK or code is bounded as tightly as English prose."""
    chars = sum(len(str(m.get("content") or "")) for m in messages)
    return max(1.0, chars / tokens) if tokens > 0 else 3.0

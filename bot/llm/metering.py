"""Every model call metered and bounded (SPEC 17): one check before it, one record after it.

Whoever makes a model call on a chat's behalf names the spender (`spending_for`); the wrapped
clients below read it, refuse the call when a daily budget is spent, time it into the metrics,
and record what it cost.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

from compactbot.bot.llm.client import LLMClient, LLMResponse
from compactbot.bot.llm.errors import LLMError
from compactbot.bot.llm.stream import StreamingLLM, TextSink
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.store.base import UsagePurpose
from compactbot.bot.store.protocols.chat_store import ChatStore
from compactbot.bot.store.protocols.shared_limits import SharedLimits
from compactbot.bot.store.protocols.usage_store import UsageStore
from compactbot.compression import Summarizer, SummaryRequest
from compactbot.compression.summarizer import SummaryError

log = logging.getLogger(__name__)

Limit = Literal["chat_budget", "member_budget", "global_budget"]
ROOTS_CACHE_MAX = 100_000  # chat -> parent chat; a chat's parent never changes


@dataclass(frozen=True, slots=True)
class Spender:
    chat_key: str
    user_id: str | None
    purpose: UsagePurpose


@dataclass(frozen=True, slots=True)
class DailyBudgets:
    """Tokens per UTC day; 0: unlimited."""

    chat: int  # the chat with its threads
    member: int  # one member in that chat
    total: int  # every chat together


UNLIMITED = DailyBudgets(0, 0, 0)
BudgetSource = Callable[[str], Awaitable[DailyBudgets]]
# Told (model, prompt tokens, completion tokens) after each summary call.
UsageSink = Callable[[str, int, int], None]
SummarizerFactory = Callable[[UsageSink], Summarizer | None]


@dataclass(frozen=True, slots=True)
class Exhausted:
    limit: Limit
    seconds_left: float  # until the next UTC midnight, when every daily budget starts afresh


_BUDGET_NOTICES: dict[Limit, str] = {
    "chat_budget": "This chat has used its token budget for today.",
    "member_budget": "You have used your token budget in this chat for today.",
    "global_budget": "I have used my token budget for all chats for today.",
}


def budget_notice(exhausted: Exhausted) -> str:
    """What the chat is told: which budget is spent, and when it resets."""
    minutes = max(1, int(exhausted.seconds_left // 60))
    wait = f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
    return f"{_BUDGET_NOTICES[exhausted.limit]}\nIt resets at 00:00 UTC, in {wait}."


class BudgetExhausted(LLMError):
    """A daily budget is spent: the call was not made."""

    def __init__(self, exhausted: Exhausted) -> None:
        super().__init__(f"{exhausted.limit} exhausted")
        self.exhausted = exhausted


class SummaryBudgetExhausted(SummaryError):
    """The summarizer's form of `BudgetExhausted`: callers fall back to the offline extractor."""


_spender: ContextVar[Spender | None] = ContextVar("compactbot_spender", default=None)


@contextlib.contextmanager
def spending_for(chat_key: str, user_id: str | None, purpose: UsagePurpose) -> Iterator[None]:
    """Model calls made inside are checked against, and charged to, this chat and member."""
    token = _spender.set(Spender(chat_key, user_id, purpose))
    try:
        yield
    finally:
        _spender.reset(token)


def next_utc_midnight(now: float) -> float:
    today = dt.datetime.fromtimestamp(now, dt.UTC).date()
    midnight = dt.datetime.combine(today + dt.timedelta(days=1), dt.time(), dt.UTC)
    return midnight.timestamp()


def utc_day(now: float) -> str:
    return dt.datetime.fromtimestamp(now, dt.UTC).date().isoformat()


class MeteredStore(ChatStore, UsageStore, SharedLimits, Protocol):
    """A thread's parent chat, the day's spend every worker records, and the usage rows."""


class Meter:
    """Reads today's spend from the store (so every worker shares one budget) and records calls."""

    def __init__(
        self, store: MeteredStore, *, clock: Callable[[], float], metrics: Metrics
    ) -> None:
        self._store = store
        self._clock = clock
        self._metrics = metrics
        self._roots: dict[str, str] = {}
        # Set by the app once chat settings can be resolved; until then nothing is bounded.
        self.budgets: BudgetSource = _unlimited

    async def exhausted(
        self, chat_key: str, user_id: str | None, *, cost: int = 0
    ) -> Exhausted | None:
        """The first daily budget of this chat (and member) already spent, or that `cost` more
        tokens would overrun; None when the call may be made.

        A store that cannot answer allows the call: refusing would drop a stored question.
        """
        try:
            budgets = await self.budgets(chat_key)
            if budgets == UNLIMITED:
                return None
            now = self._clock()
            root = await self.root_of(chat_key)
            spend = await self._store.day_spend(
                root, user_id, utc_day(now), total=budgets.total > 0
            )
        except Exception as err:
            log.warning("token budget unavailable, allowing: %s", type(err).__name__)
            return None
        checks: tuple[tuple[Limit, int, int], ...] = (
            ("global_budget", spend.total, budgets.total),
            ("chat_budget", spend.chat, budgets.chat),
            ("member_budget", spend.member, budgets.member if user_id else 0),
        )
        for limit, used, cap in checks:
            if cap > 0 and (used >= cap or used + cost > cap):
                self._metrics.limit_refused(limit)
                return Exhausted(limit, next_utc_midnight(now) - now)
        return None

    async def root_of(self, chat_key: str) -> str:
        """The chat a thread or forum topic belongs to; a chat is its own root."""
        root = self._roots.get(chat_key)
        if root is None:
            chat = await self._store.get_chat(chat_key)
            root = chat.parent_key if chat is not None and chat.parent_key else chat_key
            if len(self._roots) >= ROOTS_CACHE_MAX:
                self._roots.clear()
            self._roots[chat_key] = root
        return root

    async def check(self) -> Spender | None:
        """The current spender, after making sure it may still spend; raises BudgetExhausted."""
        spender = _spender.get()
        if spender is None:
            log.warning("model call without a spender: not metered")
            return None
        exhausted = await self.exhausted(spender.chat_key, spender.user_id)
        if exhausted is not None:
            raise BudgetExhausted(exhausted)
        return spender

    def timed(self, purpose: Literal["reply", "summary"]) -> AbstractContextManager[None]:
        """Time one model call into the metrics; an exception counts it as an error."""
        return self._metrics.llm_timer(purpose)

    async def record(self, spender: Spender | None, prompt: int, completion: int) -> None:
        if spender is None:
            return
        self._metrics.tokens_metered(spender.purpose, prompt + completion)
        try:
            await self._store.add_usage(
                spender.chat_key, spender.user_id, spender.purpose, prompt, completion
            )
        except Exception:
            log.exception("usage not recorded (chat=%s)", spender.chat_key)


async def _unlimited(_chat_key: str) -> DailyBudgets:
    return UNLIMITED


class MeteredLLM:
    """An LLMClient whose every completion is checked against the budgets and recorded."""

    def __init__(self, inner: LLMClient, meter: Meter) -> None:
        self._inner = inner
        self.meter = meter
        self.model = inner.model
        self.offline = inner.offline

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        spender = await self.meter.check()
        with self.meter.timed("reply"):
            response = await self._inner.complete(messages, tools=tools, model=model)
        await self.meter.record(spender, response.prompt_tokens, response.completion_tokens)
        return response


class MeteredStreamingLLM(MeteredLLM):
    """A MeteredLLM over a client that can stream."""

    def __init__(self, inner: LLMClient, meter: Meter) -> None:
        super().__init__(inner, meter)
        self._streaming = cast(StreamingLLM, inner)

    async def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        on_text: TextSink,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        spender = await self.meter.check()
        with self.meter.timed("reply"):
            response = await self._streaming.stream(
                messages, on_text=on_text, tools=tools, model=model
            )
        await self.meter.record(spender, response.prompt_tokens, response.completion_tokens)
        return response


def metered(inner: LLMClient, meter: Meter) -> MeteredLLM:
    """The client wrapped for metering, keeping its ability to stream."""
    if isinstance(inner, StreamingLLM):
        return MeteredStreamingLLM(inner, meter)
    return MeteredLLM(inner, meter)


class MeteredSummarizer:
    """A Summarizer checked against the budgets before each call; its usage recorded after."""

    def __init__(self, inner: Summarizer, calls: list[tuple[int, int]], meter: Meter) -> None:
        self._inner = inner
        self._calls = calls  # filled by the inner summarizer's usage callback
        self._meter = meter

    async def summarize(self, request: SummaryRequest) -> str:
        try:
            spender = await self._meter.check()
        except BudgetExhausted as exc:
            raise SummaryBudgetExhausted(str(exc)) from exc
        self._calls.clear()
        try:
            with self._meter.timed("summary"):
                return await self._inner.summarize(request)
        finally:
            # A summary may take several calls (a fallback model); each one was paid for.
            for prompt, completion in self._calls:
                await self._meter.record(spender, prompt, completion)
            self._calls.clear()


def metered_summarizers(factory: SummarizerFactory, meter: Meter) -> SummarizerFactory:
    """`factory` whose summarizers are metered; the caller's usage sink still hears each call."""

    def build(sink: UsageSink) -> Summarizer | None:
        calls: list[tuple[int, int]] = []

        def both(model: str, prompt: int, completion: int) -> None:
            calls.append((prompt, completion))
            sink(model, prompt, completion)

        inner = factory(both)
        return MeteredSummarizer(inner, calls, meter) if inner is not None else None

    return build

"""Model calls timed into the metrics: the reply client and the summarizer, wrapped unchanged."""

from __future__ import annotations

from typing import Any, cast

from compactbot.bot.llm.client import LLMClient, LLMResponse
from compactbot.bot.llm.stream import StreamingLLM, TextSink
from compactbot.bot.operators.metrics import Metrics
from compactbot.compression import Summarizer, SummaryRequest


class TimedLLM:
    """An LLMClient that records each completion's duration and whether it succeeded."""

    def __init__(self, inner: LLMClient, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics
        self.model = inner.model
        self.offline = inner.offline

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        with self._metrics.llm_timer("reply"):
            return await self._inner.complete(messages, tools=tools, model=model)


class TimedStreamingLLM(TimedLLM):
    """A TimedLLM over a client that can stream: streamed answers are timed as replies too."""

    def __init__(self, inner: LLMClient, metrics: Metrics) -> None:
        super().__init__(inner, metrics)
        self._streaming = cast(StreamingLLM, inner)

    async def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        on_text: TextSink,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        with self._metrics.llm_timer("reply"):
            return await self._streaming.stream(messages, on_text=on_text, tools=tools, model=model)


def timed(inner: LLMClient, metrics: Metrics) -> TimedLLM:
    """The client wrapped for metrics, keeping its ability to stream."""
    if isinstance(inner, StreamingLLM):
        return TimedStreamingLLM(inner, metrics)
    return TimedLLM(inner, metrics)


class TimedSummarizer:
    """A Summarizer whose calls are timed the same way, as purpose "summary"."""

    def __init__(self, inner: Summarizer, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    async def summarize(self, request: SummaryRequest) -> str:
        with self._metrics.llm_timer("summary"):
            return await self._inner.summarize(request)

"""Model calls timed into the metrics: the reply client and the summarizer, wrapped unchanged."""

from __future__ import annotations

from typing import Any

from bot.llm import LLMClient, LLMResponse
from bot.metrics import Metrics
from compression import Summarizer, SummaryRequest


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


class TimedSummarizer:
    """A Summarizer whose calls are timed the same way, as purpose "summary"."""

    def __init__(self, inner: Summarizer, metrics: Metrics) -> None:
        self._inner = inner
        self._metrics = metrics

    async def summarize(self, request: SummaryRequest) -> str:
        with self._metrics.llm_timer("summary"):
            return await self._inner.summarize(request)

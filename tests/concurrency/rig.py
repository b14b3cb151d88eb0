"""Deterministic pieces for the concurrency tests: gated summarizers and models, a real App."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compactbot.bot.app import App
from compactbot.bot.compaction.session_compactor import UsageSink
from compactbot.bot.llm.client import LLMResponse
from compactbot.compression import Summarizer, SummaryRequest
from compactbot.compression.deterministic import deterministic_summary
from compactbot.compression.tokens import counter_for
from tests.compression.scripted import FakeClock
from tests.harness import RecordingAdapter, group_message
from tests.reliability.rig import marker_of, yaml_config

CHAT = "test:g1"
PROMPT_TOKENS_REPORTED = 1_234  # what the fake provider says; never equal to a local count

FILLER = "We also went over the flaky integration suite, the lunch plans and the staging outage."

BASE_SECTIONS: dict[str, Any] = {
    "model": {"context_length": 100_000},
    "compression": {"protect_last_n": 5, "hygiene_max_wait_seconds": 5.0},
    "overnight": {"min_ratio": 0.005, "idle_minutes": 1, "jitter_seconds": 0},
    "bounds": {"hygiene_hard_message_limit": [10, 20000]},
}


@dataclass
class GatedSummarizer:
    """Blocks every summary until `release` is set; `started` says one is being written."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    calls: int = 0
    # A fixed summary (a model that keeps it short), else the built-in extractive one.
    text: str | None = None

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        self.started.set()
        await self.release.wait()
        return self.text or deterministic_summary(request, unavailable=False)

    def factory(self, _usage: UsageSink) -> Summarizer:
        return self


@dataclass
class GatedLLM:
    """An LLMClient whose answers wait for `release` (when `hold` is on); names what it answers."""

    model: str = "fake-model"
    offline: bool = False
    hold: bool = False
    called: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    requests: list[list[dict[str, Any]]] = field(default_factory=list)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        self.requests.append([dict(m) for m in messages])
        self.called.set()
        if self.hold:
            await self.release.wait()
        tag = marker_of(str(messages[-1].get("content") or "")) or "none"
        text = f"reply for <<{tag}>>"
        return LLMResponse(
            text, (), PROMPT_TOKENS_REPORTED, counter_for(None).count_text(text), "m"
        )


@contextlib.asynccontextmanager
async def running(
    tmp_path: Path,
    *,
    llm: Any,
    summarizer: GatedSummarizer,
    clock: FakeClock,
    sections: Mapping[str, Any] | None = None,
) -> AsyncIterator[App]:
    merged = {key: dict(value) for key, value in BASE_SECTIONS.items()}
    for key, value in (sections or {}).items():
        merged.setdefault(key, {}).update(value)
    config = yaml_config(tmp_path, merged)
    async with App(config, llm=llm, clock=clock, summarizer_factory=summarizer.factory) as app:
        yield app


async def chatter(app: App, adapter: RecordingAdapter, count: int, *, start: int = 0) -> None:
    """`count` unaddressed messages with markers `m<i>`, each long enough to be summarised."""
    for i in range(start, start + count):
        message = group_message(chatter_text(i), addressed=False, author="Bob")
        await app.gateway.handle(message, adapter)


def chatter_text(i: int) -> str:
    return f"<<m{i}>> note {i}: the deploy of service {i % 7} moved to slot {i * 3}. " + FILLER * 8

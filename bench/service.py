"""The real service (store, gateway, runner, compactor) with fake edges, for pipeline runs.

The model is an in-process `LLMClient` (zero or random latency). Summaries go over real HTTP
through the real `OpenAISummarizer` to a tiny local OpenAI-compatible endpoint, so nothing
ever leaves 127.0.0.1. Messages enter through `gateway.handle` as an adapter would send them.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import socket
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

from compactbot.bot.app import App
from compactbot.bot.events import InboundMessage, ReplyTarget
from compactbot.bot.llm.client import LLMResponse
from compactbot.bot.settings.config import Config
from compactbot.bot.settings.loading import load_config

# A reply the size of a short group-chat answer.
REPLY_TEXT = "Sure — noted. Here is a short answer to that."
CHARS_PER_TOKEN = 4


class FakeLLM:
    """`bot.llm.LLMClient` answering at once, or after a seeded random delay."""

    model = "bench-fake"
    offline = False

    def __init__(self, *, max_latency_seconds: float = 0.0, seed: int = 0) -> None:
        self._max_latency = max_latency_seconds
        self._rng = random.Random(f"llm:{seed}")
        self.calls = 0

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        self.calls += 1
        if self._max_latency:
            await asyncio.sleep(self._rng.uniform(0.0, self._max_latency))
        # The provider's count comes free with a real response; estimate it as cheaply here.
        chars = sum(len(m.get("content") or "") for m in messages if isinstance(m, dict))
        return LLMResponse(
            content=f"{REPLY_TEXT} ({self.calls})",
            tool_calls=(),
            prompt_tokens=chars // CHARS_PER_TOKEN,
            completion_tokens=12,
            model=self.model,
        )


@dataclass(slots=True)
class SummaryEndpoint:
    """A local OpenAI-compatible `/v1/chat/completions` that writes a short summary."""

    max_latency_seconds: float = 0.0
    seed: int = 0
    calls: int = 0
    base_url: str = ""
    _rng: random.Random = field(default_factory=random.Random)

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls += 1
        if self.max_latency_seconds:
            await asyncio.sleep(self._rng.uniform(0.0, self.max_latency_seconds))
        prompt = body["messages"][-1]["content"]
        summary = (
            "## Topics\n- The group chatted about many things; "
            f"summary {self.calls} of {len(prompt):,} prompt characters.\n"
            "## Key facts and exact values\n- none recorded by the fake summarizer"
        )
        return web.json_response(
            {
                "id": f"chatcmpl-{self.calls}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "bench-fake"),
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": summary},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {
                    "prompt_tokens": len(prompt) // CHARS_PER_TOKEN,
                    "completion_tokens": len(summary) // CHARS_PER_TOKEN,
                    "total_tokens": (len(prompt) + len(summary)) // CHARS_PER_TOKEN,
                },
            }
        )


@contextlib.asynccontextmanager
async def summary_endpoint(
    max_latency_seconds: float = 0.0, seed: int = 0
) -> AsyncIterator[SummaryEndpoint]:
    endpoint = SummaryEndpoint(max_latency_seconds, seed, _rng=random.Random(f"sum:{seed}"))
    app = web.Application()
    app.router.add_post("/v1/chat/completions", endpoint.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    endpoint.base_url = f"http://127.0.0.1:{port}/v1"
    try:
        yield endpoint
    finally:
        await runner.cleanup()


# A bench measures speed: no rate limit or token budget may refuse its questions.
UNLIMITED = {
    "user_rate_limit_per_minute": 0,
    "chat_rate_limit_per_minute": 0,
    "daily_token_budget": 0,
    "member_daily_token_budget": 0,
    "global_daily_token_budget": 0,
}


def bench_config(
    directory: Path, *, context_length: int, endpoint_url: str, **gateway: Any
) -> Config:
    """Config from a private YAML file and env-style values; never the machine's own config."""
    path = directory / "bench-config.yaml"
    path.write_text(yaml.safe_dump({"gateway": {**UNLIMITED, **gateway}}))
    env = {
        "COMPACTBOT_DB": str(directory / "bench.db"),
        "COMPACTBOT_CONTEXT_LENGTH": str(context_length),
        "OPENAI_BASE_URL": endpoint_url,
        "OPENAI_API_KEY": "sk-bench-local-fake",
        "COMPACTBOT_MODEL": FakeLLM.model,
    }
    return load_config(env, path=path)


@dataclass(slots=True)
class Adapter:
    """A platform that records replies and wakes whoever waits for the answer to a message."""

    platform: str = "bench"
    sent: list[tuple[ReplyTarget, str, float]] = field(default_factory=list)
    waiters: dict[tuple[str, str], asyncio.Future[float]] = field(default_factory=dict)

    async def send(self, target: ReplyTarget, text: str) -> None:
        now = time.perf_counter()
        self.sent.append((target, text, now))
        key = (target.chat_id, target.reply_to_message_id or "")
        waiter = self.waiters.pop(key, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(now)

    async def is_admin(self, message: InboundMessage) -> bool:
        return False

    def typing(self, target: ReplyTarget) -> contextlib.AbstractAsyncContextManager[None]:
        return contextlib.nullcontext()

    def expect(self, chat_id: str, message_id: str) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiters[(chat_id, message_id)] = future
        return future


def inbound(
    chat_id: str, author: str, text: str, message_id: str, *, addressed: bool
) -> InboundMessage:
    return InboundMessage(
        platform="bench",
        chat_id=chat_id,
        author_id=author.lower(),
        author_name=author,
        text=text,
        addressed=addressed,
        is_group=True,
        platform_message_id=message_id,
        update_id=f"{chat_id}:{message_id}",
    )


@contextlib.asynccontextmanager
async def running_service(
    directory: Path,
    *,
    context_length: int,
    llm: Any,
    summary_latency_seconds: float = 0.0,
    seed: int = 0,
    clock: Callable[[], float] = time.time,
    **gateway: Any,
) -> AsyncIterator[tuple[App, SummaryEndpoint]]:
    """The App as `compactbot run` starts it on SQLite."""
    async with summary_endpoint(summary_latency_seconds, seed) as endpoint:
        config = bench_config(
            directory, context_length=context_length, endpoint_url=endpoint.base_url, **gateway
        )
        async with App(config, llm=llm, clock=clock) as app:
            yield app, endpoint

"""Both gateways answer through one path: `compactbot run`'s lanes and a worker's durable jobs
tell a chat the same things, from the same steps (limits, failure notices, the reply)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from compactbot.bot.app import App
from compactbot.bot.ingress.gateway import Gateway
from compactbot.bot.llm.client import LLMResponse
from compactbot.bot.llm.errors import LLMTransientError
from compactbot.bot.services import Services
from compactbot.bot.store import PostgresStore
from compactbot.bot.turns.answer import TURN_FAILED
from compactbot.bot.turns.failure_notices import REPEAT_NOTICE
from compactbot.bot.workers.durable_gateway import DurableGateway
from compactbot.bot.workers.durable_turns import TurnConsumer
from compactbot.bot.workers.outbox import OutboxSender
from tests import postgres_server
from tests.harness import RecordingAdapter, group_message, make_config

CHAT = "test:g1"
LEASE_SECONDS = 30.0
MODEL_DOWN = "couldn't reach the language model"
SLOW_DOWN = "faster than I can answer"


@dataclass
class ScriptedLLM:
    """A model that answers by the question: "down" fails as a model error, "crash" raises
    something no layer expects, anything else gets "answer to <question>"."""

    model: str = "fake-model"
    offline: bool = False
    calls: int = 0
    asked: list[str] = field(default_factory=list)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        self.calls += 1
        question = str(messages[-1].get("content") or "").rsplit("@bot ", 1)[-1]
        if question == "down":
            raise LLMTransientError("connection refused")
        if question == "crash":
            raise ZeroDivisionError("a bug, not a model error")
        return LLMResponse(f"answer to {question}", (), 50, 5, self.model)


@dataclass
class Chat:
    """One group chat on a running app, asked one question at a time until all is said."""

    app: App
    llm: ScriptedLLM
    adapter: RecordingAdapter = field(default_factory=RecordingAdapter)

    @property
    def told(self) -> list[str]:
        return self.adapter.texts()

    async def ask(self, question: str, author: str = "Alice") -> None:
        gateway, store = self.app.gateway, self.app.services.store
        await gateway.handle(group_message(f"@bot {question}", author=author), self.adapter)
        await gateway.join()
        if not isinstance(gateway, DurableGateway):
            return
        assert isinstance(store, PostgresStore)
        adapters = {"test": self.adapter}
        consumer = TurnConsumer(
            gateway.jobs, store.inbox(), adapters, holder="w1", max_jobs=4, lease_seconds=60.0
        )
        sender = OutboxSender(
            store.outbox(), adapters, self.app.metrics, "w1", lease_seconds=LEASE_SECONDS
        )
        while True:
            started = await consumer.claim_and_start()
            await consumer.join()
            if not started and not await sender.deliver():
                return


@pytest.fixture(params=["lanes", "inbox"])
async def chat(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Chat]:
    server = postgres_server.require_server()
    async with postgres_server.fresh_schema(server) as dsn:
        store = PostgresStore(dsn)
        config = make_config(tmp_path, {"COMPACTBOT_DB": dsn})
        llm = ScriptedLLM()

        def durable(services: Services) -> Gateway:
            return DurableGateway(services, store.inbox())

        factory = durable if request.param == "inbox" else Gateway
        async with App(config, store=store, llm=llm, gateway_factory=factory) as app:
            yield Chat(app, llm)


async def test_failures_are_explained_once_until_an_answer_and_a_crash_still_gets_a_notice(
    chat: Chat,
) -> None:
    for question in ("down", "down", "fine", "crash", "down"):
        await chat.ask(question)
    full, repeat, answer, crashed, explained_again = chat.told
    assert MODEL_DOWN in full and repeat == REPEAT_NOTICE
    assert answer == "answer to fine"
    assert crashed == TURN_FAILED
    assert MODEL_DOWN in explained_again  # the answer in between reset the notices
    history = await chat.app.services.store.load_history(CHAT)
    assert [m.text for m in history if m.role == "assistant"] == ["answer to fine"]


async def test_a_member_over_the_rate_limit_is_told_once_and_the_model_is_not_asked(
    chat: Chat,
) -> None:
    await chat.app.services.store.set_chat_setting(CHAT, "user_rate_limit_per_minute", "1")
    for question in ("first", "second", "third"):
        await chat.ask(question, author="Bob")
    answer, refusal = chat.told
    assert answer == "answer to first"
    assert SLOW_DOWN in refusal and refusal.startswith("Bob")
    assert chat.llm.calls == 1

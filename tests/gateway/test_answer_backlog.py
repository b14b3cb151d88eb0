"""A chat whose answers fall behind answers its newest question with the skipped ones in view."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compactbot.bot.app import App
from compactbot.bot.llm.client import LLMResponse
from compactbot.bot.turns.answer_backlog import AnswerBacklog
from tests.harness import RecordingAdapter, group_message, make_config


@dataclass
class GatedLLM:
    """An in-process `LLMClient` whose first answer waits until the test opens the gate."""

    model: str = "fake-model"
    offline: bool = False
    gate: asyncio.Event = field(default_factory=asyncio.Event)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    requests: list[list[dict[str, Any]]] = field(default_factory=list)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        self.requests.append([dict(m) for m in messages])
        self.started.set()
        await self.gate.wait()
        asked = str(messages[-1].get("content"))
        return LLMResponse(f"answer to {asked}", (), 100, 5, self.model)


async def test_a_backlog_of_questions_is_answered_once_for_the_newest_and_says_so(
    tmp_path: Path,
) -> None:
    llm = GatedLLM()
    async with App(make_config(tmp_path), llm=llm) as app:
        adapter = RecordingAdapter()
        await app.gateway.handle(group_message("@bot q1"), adapter)
        await llm.started.wait()  # q1's turn holds the chat's lane
        for n in range(2, 27):
            # Several members, so no one of them meets the per-member rate limit.
            author = ("Bob", "Cid", "Dee", "Eve", "Fay")[n % 5]
            await app.gateway.handle(group_message(f"@bot q{n}", author=author), adapter)
        llm.gate.set()
        await app.gateway.join()

    assert len(llm.requests) == 2  # q1, then q26 for q2…q26
    newest = str(llm.requests[1])
    assert all(f"q{n}" in newest for n in range(2, 27))
    texts = adapter.texts()
    assert texts[0] == "answer to [Alice] @bot q1"
    assert texts[1] == "⏩ I fell behind, so I'm answering the last 25 questions together."
    assert texts[2] == "answer to [Cid] @bot q26"
    assert len(texts) == 3


def test_a_short_queue_is_answered_question_by_question() -> None:
    backlog = AnswerBacklog(max_waiting=3)
    tickets = [backlog.enqueue("chat") for _ in range(3)]
    assert [backlog.begin("chat", t) for t in tickets] == [0, 0, 0]


def test_a_long_queue_collapses_into_its_newest_question() -> None:
    backlog = AnswerBacklog(max_waiting=3)
    tickets = [backlog.enqueue("chat") for _ in range(5)]
    assert [backlog.begin("chat", t) for t in tickets] == [None, None, None, None, 4]
    # The next question after the backlog cleared is answered on its own again.
    assert backlog.begin("chat", backlog.enqueue("chat")) == 0

"""Answered turns read the transcript from the working set: once after start, deltas after."""

from __future__ import annotations

from typing import Any

from compactbot.bot.compaction.session_compactor import SessionCompactor
from compactbot.bot.llm.client import LLMResponse, ToolCall
from compactbot.bot.store import NewMessage
from compactbot.bot.store.backends import Store
from compactbot.bot.turns.runner import AgentRunner, TurnRequest
from compactbot.bot.turns.working_set import WorkingSet
from compactbot.compression import CompressorConfig
from compactbot.compression.tokens import counter_for
from tests.store.factories import assistant, user


class ToolThenReplyLLM:
    """Asks for one search_history call, then answers; keeps every request it was sent."""

    model = "scripted"
    offline = False

    def __init__(self) -> None:
        self.requests: list[list[dict[str, Any]]] = []

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        self.requests.append([dict(m) for m in messages])
        if messages[-1]["role"] == "tool":
            return LLMResponse("found it", (), 100, 3, self.model)
        call = ToolCall(f"call{len(self.requests)}", "search_history", '{"query": "deploy"}')
        return LLMResponse(None, (call,), 100, 3, self.model)


async def _prompt(_chat_key: str) -> str:
    return "system prompt"


async def _turn(runner: AgentRunner, store: Store, session_id: int, text: str) -> str | None:
    (anchor,) = await store.append_messages(session_id, [user(text)])
    request = TurnRequest(
        session_id=session_id,
        chat_key="console:room",
        anchor_id=anchor,
        author_id="alice",
        author_name="alice",
        can_remember=False,
        settings=CompressorConfig(context_length=64_000),
    )
    return (await runner.run_turn(request)).reply


async def test_turns_and_tool_rounds_do_not_reload_the_transcript(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user("the deploy is on friday"), assistant("ok")])
    llm, working_set, counter = ToolThenReplyLLM(), WorkingSet(store), counter_for(None)
    compactor = SessionCompactor(store, counter, lambda _usage: None)
    runner = AgentRunner(store, llm, compactor, counter, _prompt, working_set)
    assert await _turn(runner, store, session.id, "when is the deploy?") == "found it"
    await store.append_messages(session.id, [NewMessage(role="assistant", content="x", tokens=1)])
    assert await _turn(runner, store, session.id, "and again?") == "found it"
    assert working_set.loads == 1
    # The request after the tool round is exactly the stored transcript up to that moment.
    stored = [m.to_openai() for m in await store.load_active(session.id)]
    last_request = llm.requests[-1]
    assert last_request[0] == {"role": "system", "content": "system prompt"}
    assert last_request[1:] == stored[: len(last_request) - 1]
    assert last_request[-1]["role"] == "tool"

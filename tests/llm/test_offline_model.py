"""The offline model: search the history with a tool call, then quote what it found."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from compactbot.bot.llm.client import LLMResponse
from compactbot.bot.llm.offline_model import OfflineModel, question_keywords
from compactbot.bot.store.base import NewMessage
from compactbot.bot.store.sqlite.store import SqliteStore
from compactbot.bot.turns.tools import DEFAULT_SEARCH_LIMIT, TOOL_SCHEMAS, ToolContext, run_tool
from compactbot.compression.memory import Memory, MemoryEntry

CHAT = "console:room"
NOV_29 = datetime(2026, 11, 29, 15, 0, tzinfo=UTC).timestamp()
DEC_02 = datetime(2026, 12, 2, 9, 0, tzinfo=UTC).timestamp()


def _user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def _tool_result(call_id: str, result: dict) -> dict[str, str]:
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(result)}


@pytest.mark.parametrize(
    ("question", "keywords"),
    [
        ("what did Bob say about the deploy?", "Bob deploy"),
        ("[Carol] @compactbot what did Bob say about the deploy?", "Bob deploy"),
        ("When is the DB migration, again??", "DB migration"),
        ("Что сказал Боб про деплой?", "Что сказал Боб про деплой"),
        ("部署计划是什么", "部署计划是什么"),
        ("hi @compactbot!", ""),
        ("/start", ""),
    ],
)
def test_question_keywords(question: str, keywords: str):
    assert question_keywords(question) == keywords


async def test_question_becomes_a_search_history_call():
    model = OfflineModel()
    response = await model.complete(
        [_user("[Carol] what did Bob say about the deploy?")], tools=TOOL_SCHEMAS
    )
    assert response.content is None
    search, recall = response.tool_calls
    assert search.name == "search_history"
    assert json.loads(search.arguments) == {"query": "Bob deploy", "limit": DEFAULT_SEARCH_LIMIT}
    assert recall.name == "recall" and json.loads(recall.arguments) == {"query": "Bob deploy"}
    assert model.offline is True and model.model == "offline"


async def test_same_question_gives_the_same_call():
    model = OfflineModel()
    first = await model.complete([_user("deploy?")], tools=TOOL_SCHEMAS)
    second = await model.complete([_user("deploy?")], tools=TOOL_SCHEMAS)
    assert first == second


async def test_tool_result_is_answered_with_quotes():
    result = {
        "query": "Bob deploy",
        "hits": [
            {
                "speaker": "Bob",
                "date": "2026-11-29",
                "text": "We deploy on Friday after the freeze",
                "archived": True,
            },
            {"speaker": "bot", "date": "2026-11-30", "text": "x" * 400, "archived": False},
        ],
        "count": 2,
    }
    messages = [_user("[Carol] what did Bob say about the deploy?"), _tool_result("c1", result)]
    response = await OfflineModel().complete(messages, tools=TOOL_SCHEMAS)
    assert response.tool_calls == ()
    lines = (response.content or "").splitlines()
    assert lines[0].startswith("🔌 offline mode (no LLM configured)")
    assert lines[1] == "• Bob, 2026-11-29: We deploy on Friday after the freeze"
    assert len(lines[2]) < 330 and lines[2].endswith("…")


async def test_attribution_left_in_a_hit_becomes_the_speaker():
    result = {
        "query": "deploy",
        "hits": [{"date": "2026-11-29", "text": "[Bob] We deploy"}],
        "count": 1,
    }
    response = await OfflineModel().complete([_user("deploy?"), _tool_result("c1", result)])
    assert "• Bob, 2026-11-29: We deploy" in (response.content or "")


async def test_no_hits_says_nothing_was_found():
    result = {"query": "kubernetes", "hits": [], "count": 0}
    response = await OfflineModel().complete([_user("kubernetes?"), _tool_result("c1", result)])
    assert "I found nothing about “kubernetes” in this chat's history" in (response.content or "")


async def test_at_most_five_hits_are_quoted():
    hits = [{"speaker": "A", "date": "2026-11-29", "text": f"deploy {i}"} for i in range(8)]
    result = {"query": "deploy", "hits": hits, "count": 8}
    response = await OfflineModel().complete([_user("deploy?"), _tool_result("c1", result)])
    assert (response.content or "").count("\n• ") == 5


async def test_greeting_gets_the_offline_banner():
    response = await OfflineModel().complete([_user("[Alice] hi @compactbot")], tools=TOOL_SCHEMAS)
    assert response.tool_calls == ()
    assert (response.content or "").startswith("🔌 offline mode")


async def test_without_the_search_tool_it_does_not_call_it():
    response = await OfflineModel().complete([_user("what about the deploy?")], tools=None)
    assert response.tool_calls == ()
    assert "offline mode" in (response.content or "")


async def test_usage_is_counted_over_the_request():
    response = await OfflineModel().complete([_user("what about the deploy?")], tools=TOOL_SCHEMAS)
    assert response.prompt_tokens > 0
    assert response.completion_tokens > 0


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "offline.db") as opened:
        yield opened


async def _turn(model: OfflineModel, messages: list[dict], ctx: ToolContext) -> LLMResponse:
    """One agent turn: call the model, run its tool calls, call it again until it answers."""
    while True:
        response = await model.complete(messages, tools=TOOL_SCHEMAS)
        if not response.tool_calls:
            return response
        messages.append(response.as_message())
        for call in response.tool_calls:
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": await run_tool(call, ctx)}
            )


async def test_full_loop_answers_from_an_archived_message(store: SqliteStore):
    await store.upsert_chat(CHAT, "console")
    session = await store.active_session(CHAT)
    bob = NewMessage(
        role="user",
        content="[Bob] We deploy on Friday after the freeze",
        tokens=12,
        author_id="u-bob",
        author_name="Bob",
        created_at=NOV_29,
    )
    chatter = NewMessage(
        role="user",
        content="[Alice] lunch at noon?",
        tokens=8,
        author_id="u-alice",
        author_name="Alice",
        created_at=NOV_29 + 60,
    )
    ids = await store.append_messages(session.id, [bob, chatter])
    summary = NewMessage(
        role="user",
        content="[CONTEXT COMPACTION — REFERENCE ONLY] Bob: deploy plans.",
        tokens=10,
        kind="summary",
    )
    commit = await store.archive_and_compact(
        await store.get_session(session.id), [summary], ids[-1]
    )
    assert commit is not None and commit.archived == 2
    question = NewMessage(
        role="user",
        content="[Carol] what did Bob say about the deploy?",
        tokens=12,
        author_id="u-carol",
        author_name="Carol",
        created_at=DEC_02,
    )
    (question_id,) = await store.append_messages(session.id, [question])
    ctx = ToolContext(
        store=store,
        chat_key=CHAT,
        session_id=session.id,
        author_id="u-carol",
        author_name="Carol",
        can_remember=False,
        current_message_id=question_id,
    )

    answer = await _turn(OfflineModel(), [_user("[Carol] what did Bob say about the deploy?")], ctx)

    lines = (answer.content or "").splitlines()
    assert lines[0].startswith("🔌 offline mode (no LLM configured)")
    assert lines[1] == "• Bob, 2026-11-29: We deploy on Friday after the freeze"
    assert len(lines) == 2  # neither the summary nor the question itself is quoted


async def test_our_rules_finds_a_stated_rule_a_remembered_rule_and_a_pin(store: SqliteStore):
    await store.upsert_chat(CHAT, "console")
    session = await store.active_session(CHAT)
    said = [
        ("u-dave", "Dave", "[Dave] Nobody deploys on Fridays, no exceptions."),
        ("u-erin", "Erin", "[Erin] lunch at noon?"),
    ]
    early = NewMessage(role="user", content="[Ann] Only Grace merges to main.", tokens=9)
    (early_id,) = await store.append_messages(session.id, [early])
    remembered = MemoryEntry(
        1, "rule", "Only Grace merges to main.", speaker="Ann", date="2026-11-29"
    )
    summary = NewMessage(role="user", content="[CONTEXT COMPACTION — REFERENCE ONLY] x", tokens=5,
                         kind="summary")  # fmt: skip
    commit = await store.archive_and_compact(
        await store.get_session(session.id), [summary], early_id, memory=Memory((remembered,))
    )
    assert commit is not None
    rows = [
        NewMessage(role="user", content=text, tokens=9, author_id=uid, author_name=name)
        for uid, name, text in said
    ]
    await store.append_messages(session.id, rows)
    await store.add_pin(CHAT, "Never share the wifi password", "u-alice")
    question = "[Erin] what are our rules?"
    ctx = ToolContext(store, CHAT, session.id, "u-erin", "Erin", can_remember=False)
    context = [
        {"role": "system", "content": "You are a bot."},
        *({"role": "user", "content": text} for _, _, text in said),
        {"role": "assistant", "content": "You must never deploy on Sundays."},  # the bot's own
        _user("[Alice] /pin Never share the wifi password"),
        _user(question),
    ]

    answer = await _turn(OfflineModel(), context, ctx)

    text = answer.content or ""
    assert "I found nothing" not in text
    assert "• pinned: Never share the wifi password" in text
    assert "• Dave: Nobody deploys on Fridays, no exceptions." in text
    assert "• Ann, 2026-11-29: Only Grace merges to main." in text
    assert "Sundays" not in text and "lunch" not in text and "/pin" not in text


@pytest.mark.parametrize(
    ("question", "said"),
    [
        ("[Bob] what are our rules?", "[Dave] We never deploy on Fridays."),
        ("[Bob] 我们的规则是什么？", "[Dave] 禁止在实验室吃东西。"),
        ("[Bob] any preferences I should know?", "[Carol] I prefer short answers."),
    ],
)
async def test_a_question_for_a_kind_quotes_the_members_lines_of_that_kind(
    question: str, said: str
) -> None:
    context = [
        _user(said),
        _user("[Erin] lunch at noon?"),
        {"role": "assistant", "content": "Never paste keys; I prefer tea."},  # the bot's own
        _user(question),
    ]
    nothing = {"query": "x", "hits": [], "count": 0}
    response = await OfflineModel().complete([*context, _tool_result("c1", nothing)])
    lines = (response.content or "").splitlines()
    speaker, text = said[1:].split("] ", 1)
    assert lines[1:] == [f"• {speaker}: {text}"]

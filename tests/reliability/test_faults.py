"""Faults: the model down, slow, garbled or refusing; sends failing; the database busy.

In every case the bot keeps serving the other chats, answers every failed question with a notice
(the full explanation once, a short line after it), and keeps every message it was given.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from compactbot.bot.app import App
from compactbot.bot.settings.config import Config
from compactbot.bot.turns.failure_notices import REPEAT_NOTICE
from tests.fakes.openai_server import (
    Behaviour,
    Empty,
    Error,
    FakeOpenAI,
    Hang,
    Malformed,
    Reply,
    unused_port,
)
from tests.harness import RecordingAdapter, endpoint_env, group_message, running_app
from tests.reliability.rig import EchoLLM, marker_of, yaml_config

CANNOT_ANSWER = "Your message is saved"
SUMMARY = "## Participants\n- the group\n## Key facts and exact values\n- summary"
# Long enough that the slow chat is still waiting while the others are answered.
SLOW_TIMEOUT_SECONDS = 1.0
BUSY_WRITER_SECONDS = 1.0


def fault_config(
    tmp_path: Path, base_url: str, *, timeout_seconds: float = 2.0, retries: int = 0
) -> Config:
    """A real OpenAI client on `base_url`, with the timeout and retries set in YAML."""
    sections = {"model": {"request_timeout_seconds": timeout_seconds, "max_retries": retries}}
    return yaml_config(tmp_path, sections, endpoint_env(base_url, context_length=32_000))


def by_chat(responses: Mapping[str, Behaviour]) -> Any:
    """A responder that picks the behaviour from the `<<m{chat}-...>>` tag of the last message."""

    def respond(body: dict[str, Any]) -> Behaviour:
        tag = marker_of(str(body["messages"][-1].get("content"))) or ""
        chat = tag.removeprefix("m").split("-")[0]
        return responses.get(chat, Reply(f"answer <<{tag}>>"))

    return respond


async def ask(app: App, adapter: RecordingAdapter, chat: str, count: int) -> None:
    for i in range(count):
        await app.gateway.handle(
            group_message(f"<<m{chat}-{i}>> @bot question {i}", chat_id=chat, author="Bob"),
            adapter,
        )


async def stored_questions(app: App, chat: str) -> list[str]:
    rows = await app.services.store.load_history(f"test:{chat}", include_archived=True)
    return [marker_of(r.text) or "" for r in rows if r.role == "user"]


def assert_each_failure_noticed(texts: list[str], questions: int) -> None:
    """One notice per failed question: the explanation first, then the short repeat."""
    assert len(texts) == questions, texts
    assert CANNOT_ANSWER in texts[0] and texts[0] != REPEAT_NOTICE
    assert texts[1:] == [REPEAT_NOTICE] * (questions - 1)


async def test_llm_endpoint_down_every_question_gets_a_notice_and_every_message_is_kept(
    tmp_path: Path,
) -> None:
    config = fault_config(tmp_path, f"http://127.0.0.1:{unused_port()}/v1", retries=1)
    async with running_app(config) as app:
        adapter = RecordingAdapter()
        await asyncio.gather(ask(app, adapter, "a", 3), ask(app, adapter, "b", 3))
        await app.gateway.join()
        for chat in ("a", "b"):
            texts = adapter.texts(chat)
            assert_each_failure_noticed(texts, 3)
            assert "couldn't reach the language model" in texts[0]
            assert await stored_questions(app, chat) == [f"m{chat}-{i}" for i in range(3)]


async def test_slow_llm_times_out_while_other_chats_are_answered(tmp_path: Path) -> None:
    async with FakeOpenAI(by_chat({"slow": Hang(30)})) as fake:
        config = fault_config(tmp_path, fake.base_url, timeout_seconds=SLOW_TIMEOUT_SECONDS)
        async with running_app(config) as app:
            adapter = RecordingAdapter()
            await asyncio.gather(ask(app, adapter, "slow", 2), ask(app, adapter, "fast", 3))
            await app.gateway.join()

            fast = adapter.texts("fast")
            assert fast == [f"answer <<mfast-{i}>>" for i in range(3)]
            assert_each_failure_noticed(adapter.texts("slow"), 2)
            # The fast chat was served while the slow one was still waiting on the model.
            chats = [target.chat_id for target, _ in adapter.sent]
            assert chats.index("slow") > max(i for i, c in enumerate(chats) if c == "fast")
            assert await stored_questions(app, "slow") == ["mslow-0", "mslow-1"]


async def test_malformed_empty_rate_limited_and_500_replies_are_survived(tmp_path: Path) -> None:
    responses: dict[str, Behaviour] = {
        "garbled": Malformed(),
        "nochoices": Empty(no_choices=True),
        "limited": Error.rate_limited(retry_after_ms=20),
        "broken": Error.server_error(),
    }
    async with FakeOpenAI(by_chat(responses)) as fake:
        config = fault_config(tmp_path, fake.base_url)
        async with running_app(config) as app:
            adapter = RecordingAdapter()
            chats = [*responses, "ok"]
            await asyncio.gather(*(ask(app, adapter, chat, 2) for chat in chats))
            await app.gateway.join()

            assert adapter.texts("ok") == ["answer <<mok-0>>", "answer <<mok-1>>"]
            for chat in responses:
                assert_each_failure_noticed(adapter.texts(chat), 2)
            for chat in chats:
                assert await stored_questions(app, chat) == [f"m{chat}-0", f"m{chat}-1"]


async def test_empty_model_reply_gets_a_notice_not_a_placeholder(tmp_path: Path) -> None:
    async with FakeOpenAI(by_chat({"empty": Empty()})) as fake:
        config = fault_config(tmp_path, fake.base_url)
        async with running_app(config) as app:
            adapter = RecordingAdapter()
            await ask(app, adapter, "empty", 2)
            await app.gateway.join()
            texts = adapter.texts("empty")
            assert "…" not in texts
            assert_each_failure_noticed(texts, 2)
            assert (
                texts[0]
                == "The model returned an empty answer. Your message is saved; please ask again."
            )
            assert await stored_questions(app, "empty") == ["mempty-0", "mempty-1"]


async def test_failed_send_is_logged_kept_in_the_transcript_and_the_chat_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="compactbot.bot.ingress.gateway")
    config = fault_config(tmp_path, "http://127.0.0.1:9/v1")
    async with running_app(config, llm=EchoLLM()) as app:
        adapter = RecordingAdapter(fail_sends=1)
        await ask(app, adapter, "g", 2)
        await app.gateway.join()
        assert adapter.texts("g") == ["reply for <<mg-1>>"]
        assert any("could not be delivered" in r.getMessage() for r in caplog.records)
        rows = await app.services.store.load_history("test:g")
        replies = [r.text for r in rows if r.role == "assistant"]
        assert replies == ["reply for <<mg-0>>", "reply for <<mg-1>>"]


async def test_database_held_by_another_writer_delays_but_loses_nothing(tmp_path: Path) -> None:
    config = fault_config(tmp_path, "http://127.0.0.1:9/v1")
    async with running_app(config, llm=EchoLLM()) as app:
        adapter = RecordingAdapter()
        await ask(app, adapter, "warmup", 1)
        await app.gateway.join()
        holding = threading.Event()

        def busy_writer() -> None:
            conn = sqlite3.connect(config.storage.database, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                holding.set()
                time.sleep(BUSY_WRITER_SECONDS)
                conn.execute("COMMIT")
            finally:
                conn.close()

        writer = asyncio.create_task(asyncio.to_thread(busy_writer))
        assert await asyncio.to_thread(holding.wait, 5)
        started = time.monotonic()
        await asyncio.gather(*(ask(app, adapter, chat, 3) for chat in ("x", "y", "z")))
        waited = time.monotonic() - started
        await writer
        await app.gateway.join()

        assert waited >= BUSY_WRITER_SECONDS / 2  # the writes really did wait for the lock
        for chat in ("x", "y", "z"):
            assert await stored_questions(app, chat) == [f"m{chat}-{i}" for i in range(3)]
            assert adapter.texts(chat) == [f"reply for <<m{chat}-{i}>>" for i in range(3)]

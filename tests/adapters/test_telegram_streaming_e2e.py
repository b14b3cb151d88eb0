"""Streamed replies on Telegram end to end: real PTB, the real openai client, fakes on 127.0.0.1."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from compactbot.adapters.telegram import TelegramPlatform
from compactbot.adapters.telegram_html import render_chunks
from compactbot.bot.app import App
from compactbot.bot.llm.stream import STREAM_BROKEN_NOTICE
from compactbot.bot.turns.streaming import DEFAULT_INTERVAL_SECONDS
from tests.fakes.fixtures import fake_telegram  # noqa: F401  (pytest fixture)
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_server import FakeTelegram
from tests.harness import endpoint_env, make_config, running_app

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

WAIT_SECONDS = 15
GROUP = -1001
# 3,000 characters of Markdown with a code block, streamed in 100-character pieces.
ANSWER = (
    "Here is the plan.\n\n"
    + " ".join(f"word{i}" for i in range(300))
    + "\n\n```python\nprint('done')\n```\n\n"
    + " ".join(f"tail{i}" for i in range(200))
)[:3000]
PIECE_CHARS = 100
PIECE_DELAY_SECONDS = 0.08  # 30 pieces: the stream lasts about 2.4 s, so edits are paced


@dataclass(frozen=True, slots=True)
class Running:
    app: App
    tg: FakeTelegram
    llm: FakeOpenAI

    async def history(self, chat_key: str) -> list[str]:
        rows = await self.app.services.store.load_history(chat_key)
        return [str(row.content) for row in rows]


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, tg: FakeTelegram) -> AsyncIterator[Running]:
    async with FakeOpenAI() as llm:
        config = make_config(
            tmp_path,
            {
                **endpoint_env(llm.base_url, context_length=32_000),
                "TELEGRAM_BOT_TOKEN": tg.token,
                "TELEGRAM_API_BASE_URL": tg.base_url,
            },
        )
        async with running_app(config) as app:
            platform = TelegramPlatform(config, app.gateway)
            await platform.start()
            try:
                yield Running(app, tg, llm)
            finally:
                await platform.stop()


@pytest.fixture
async def bot(tmp_path: Path, fake_telegram: FakeTelegram) -> AsyncIterator[Running]:  # noqa: F811
    async with serving(tmp_path, fake_telegram) as running:
        yield running


async def _answered(bot: Running) -> None:
    """The first message reached the chat, then the turn behind it finished."""
    await asyncio.wait_for(bot.tg.sent.get(), WAIT_SECONDS)
    await asyncio.wait_for(bot.app.gateway.join(), WAIT_SECONDS)


def _gaps(times: list[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


async def test_group_stream_is_one_message_edited_at_most_once_a_second(bot: Running) -> None:
    bot.llm.script(Reply(ANSWER, chunk_chars=PIECE_CHARS, chunk_delay=PIECE_DELAY_SECONDS))
    bot.tg.push_update(bot.tg.group_message("explain the plan", mention_bot=True))
    await _answered(bot)

    assert len(bot.tg.sent_log) == 1  # one message, edited in place
    edits = bot.tg.edit_log
    assert len(edits) >= 2  # at least one preview edit, then the final text
    assert all(gap >= DEFAULT_INTERVAL_SECONDS for gap in _gaps(bot.tg.edit_times))
    final = edits[-1]
    assert final["parse_mode"] == "HTML"
    assert final["text"] == render_chunks(ANSWER)[0]
    assert "<pre><code" in final["text"]  # rendered, code block included
    assert all(e["message_id"] == bot.tg.sent_log[0].message_id for e in edits)
    # The streamed request asked for usage, and the usage reached the compressor.
    request = bot.llm.completions[-1]
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    session = await bot.app.services.store.active_session(f"telegram:{GROUP}")
    assert session.compressor.last_prompt_tokens > 0
    assert ANSWER in await bot.history(f"telegram:{GROUP}")


async def test_private_stream_sends_drafts_then_one_final_message(bot: Running) -> None:
    bot.llm.script(Reply(ANSWER, chunk_chars=PIECE_CHARS, chunk_delay=PIECE_DELAY_SECONDS))
    bot.tg.push_update(bot.tg.private_message("explain the plan", user_id=7))
    await _answered(bot)
    sent = bot.tg.sent_log[0]

    drafts = bot.tg.draft_log
    assert drafts, "no sendMessageDraft frames"
    assert all(d["chat_id"] == 7 for d in drafts)
    assert len({d["draft_id"] for d in drafts}) == 1  # one draft, updated
    assert all(gap >= DEFAULT_INTERVAL_SECONDS for gap in _gaps(bot.tg.draft_times))
    last_draft_at = bot.tg.draft_times[-1]
    final_call = next(c for c in bot.tg.calls_to("sendMessage"))
    assert final_call.at > last_draft_at  # drafts first, then the message
    assert bot.tg.sent_log == [sent]
    assert sent.text == render_chunks(ANSWER)[0]
    assert not bot.tg.edit_log


async def test_flood_wait_mid_stream_is_obeyed_and_the_answer_completes(bot: Running) -> None:
    bot.tg.fail_next("editMessageText", 429, "Too Many Requests: retry after 1", retry_after=1)
    bot.llm.script(Reply(ANSWER, chunk_chars=PIECE_CHARS, chunk_delay=PIECE_DELAY_SECONDS))
    bot.tg.push_update(bot.tg.group_message("explain the plan", mention_bot=True))
    await _answered(bot)

    calls = bot.tg.calls_to("editMessageText")
    refused, after = calls[0], calls[1]
    assert after.at - refused.at >= 1.0  # retry_after honoured
    assert len(calls) == len(bot.tg.edit_log) + 1  # only the one refused edit
    assert bot.tg.edit_log[-1]["text"] == render_chunks(ANSWER)[0]
    assert len(bot.tg.sent_log) == 1


async def test_broken_stream_ends_with_what_arrived_and_a_notice(bot: Running) -> None:
    bot.llm.script(Reply(ANSWER, chunk_chars=PIECE_CHARS, chunk_delay=0.05, break_after=5))
    bot.tg.push_update(bot.tg.group_message("explain the plan", mention_bot=True))
    await _answered(bot)

    arrived = ANSWER[: 5 * PIECE_CHARS]
    expected = f"{arrived.rstrip()}\n\n{STREAM_BROKEN_NOTICE}"
    shown = bot.tg.edit_log[-1]["text"] if bot.tg.edit_log else bot.tg.sent_log[-1].text
    assert shown == render_chunks(expected)[0]
    assert len(bot.llm.completions) == 1  # not retried: members already saw the start
    assert expected in await bot.history(f"telegram:{GROUP}")


async def test_streamed_answer_in_a_forum_topic_stays_in_the_topic(bot: Running) -> None:
    bot.llm.script(Reply(ANSWER, chunk_chars=PIECE_CHARS, chunk_delay=PIECE_DELAY_SECONDS))
    update = bot.tg.group_message("explain", mention_bot=True, thread_id=42, is_forum=True)
    bot.tg.push_update(update)
    await _answered(bot)
    (preview,) = bot.tg.sent_log
    assert preview.thread_id == 42
    assert preview.params["reply_parameters"]["message_id"] == update["message"]["message_id"]
    assert bot.tg.edit_log[-1]["text"] == render_chunks(ANSWER)[0]
    assert ANSWER in await bot.history(f"telegram:{GROUP}:42")

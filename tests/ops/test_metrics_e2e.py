"""The operator endpoint during a real run: App + PTB against FakeTelegram and FakeOpenAI."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from compactbot.adapters.telegram import TelegramPlatform
from compactbot.bot.app import App
from tests.fakes.fixtures import fake_telegram, free_port  # noqa: F401  (pytest fixtures)
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_server import FakeTelegram, SentMessage
from tests.harness import endpoint_env, make_config
from tests.ops.scrape import Samples, delta, get, scrape, until, value

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

GROUP = -1001
ADMIN_ID = 7
REPLY_WAIT_SECONDS = 10
CHATTER = 8


@dataclass(frozen=True, slots=True)
class Running:
    app: App
    platform: TelegramPlatform
    tg: FakeTelegram
    llm: FakeOpenAI
    port: int

    async def reply(self) -> SentMessage:
        return await asyncio.wait_for(self.tg.sent.get(), REPLY_WAIT_SECONDS)

    async def scrape(self) -> Samples:
        return await scrape(self.port)


@contextlib.asynccontextmanager
async def serving(tmp_path: Path, tg: FakeTelegram, port: int) -> AsyncIterator[Running]:
    async with FakeOpenAI() as llm:
        config = make_config(
            tmp_path,
            {
                **endpoint_env(llm.base_url, context_length=32_000),
                "TELEGRAM_BOT_TOKEN": tg.token,
                "TELEGRAM_API_BASE_URL": tg.base_url,
                "COMPACTBOT_METRICS_LISTEN": f"127.0.0.1:{port}",
            },
        )
        async with App(config) as app:
            await app.start_operator_endpoint()
            platform = TelegramPlatform(config, app.gateway)
            await platform.start()
            app.readiness.watch_platform(platform)
            try:
                yield Running(app, platform, tg, llm, port)
            finally:
                await platform.stop()


@pytest.fixture
async def bot(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    free_port: int,  # noqa: F811
) -> AsyncIterator[Running]:
    async with serving(tmp_path, fake_telegram, free_port) as running:
        yield running


async def test_metrics_count_exactly_what_the_run_did(bot: Running) -> None:
    tg, store = bot.tg, bot.app.services.store
    chat = f"telegram:{GROUP}"
    before = await bot.scrape()
    completions_before = len(bot.llm.completions)

    for n in range(CHATTER):
        tg.push_update(tg.group_message(f"chatter {n}: " + "the release plan needs work " * 30))
    tg.push_update(tg.group_message("what did we plan?", mention_bot=True))
    await bot.reply()

    tg.fail_next("sendMessage", 403, "Forbidden: bot was kicked from the group chat")
    sends = len(tg.calls_to("sendMessage"))
    tg.push_update(tg.group_message("and the date?", mention_bot=True))
    await until(lambda: len(tg.calls_to("sendMessage")) > sends, "the refused sendMessage")
    await bot.app.gateway.join()

    tg.fail_next("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
    tg.push_update(tg.group_message("who owns it?", mention_bot=True))
    await bot.reply()

    tg.set_chat_member(GROUP, ADMIN_ID, "administrator")
    tg.push_update(tg.group_message("/compress@compact_bot", user_id=ADMIN_ID))
    await bot.reply()
    await bot.app.gateway.join()

    after = await bot.scrape()
    (event,) = await store.list_compression_events(chat_key=chat)
    received = CHATTER + 4
    assert delta(before, after, "compactbot_messages_received_total", platform="telegram") == (
        received
    )
    # Three replies were written; the platform refused one of them.
    assert delta(before, after, "compactbot_messages_answered_total", platform="telegram") == 3
    assert delta(before, after, "compactbot_send_failures_total", platform="telegram") == 1
    assert delta(before, after, "compactbot_retry_after_waits_total", platform="telegram") == 1
    assert (
        delta(before, after, "compactbot_retry_after_wait_seconds_total", platform="telegram") == 1
    )
    turns = delta(
        before, after, "compactbot_turn_seconds_count", platform="telegram", outcome="answered"
    )
    assert turns == 3
    replies = delta(
        before, after, "compactbot_llm_request_seconds_count", purpose="reply", outcome="ok"
    )
    summaries = sum(
        delta(before, after, "compactbot_llm_request_seconds_count", purpose="summary", outcome=o)
        for o in ("ok", "error")
    )
    assert replies == 3
    assert replies + summaries == len(bot.llm.completions) - completions_before
    labels = {"trigger": "manual", "outcome": event.outcome}
    assert delta(before, after, "compactbot_compactions_total", **labels) == 1
    assert event.outcome in ("compressed", "fallback")
    tokens = {"trigger": "manual"}
    assert delta(before, after, "compactbot_compaction_tokens_before_total", **tokens) == (
        event.tokens_before
    )
    assert delta(before, after, "compactbot_compaction_tokens_after_total", **tokens) == (
        event.tokens_after
    )
    assert delta(before, after, "compactbot_compaction_summary_tokens_total", **tokens) == (
        event.summary_tokens
    )
    assert delta(before, after, "compactbot_compaction_seconds_count", trigger="manual") == 1
    assert delta(before, after, "compactbot_store_commit_seconds_count") >= received
    worker = bot.app.metrics.worker
    assert value(after, "compactbot_queue_depth", worker=worker) == 0
    assert value(after, "compactbot_queue_oldest_seconds", worker=worker) == 0


async def test_metrics_carry_no_chat_ids_unless_enabled(bot: Running) -> None:
    bot.tg.push_update(bot.tg.group_message("hello there", mention_bot=True))
    await bot.reply()
    _, text = await get(bot.port, "/metrics")
    assert str(GROUP) not in text
    assert "hello there" not in text and "Alice" not in text


async def test_healthz_and_readyz_answer_while_serving(bot: Running) -> None:
    assert await get(bot.port, "/healthz") == (200, "ok\n")
    assert await get(bot.port, "/readyz") == (200, "ready\n")


async def test_readyz_turns_not_ready_while_the_database_is_gone(bot: Running) -> None:
    db = Path(bot.app.config.storage.database)
    moved = db.with_name("moved-away.db")
    await asyncio.to_thread(db.rename, moved)
    status, text = await get(bot.port, "/readyz")
    assert status == 503
    assert text == f"store: database file {db} is gone\n"
    await asyncio.to_thread(moved.rename, db)
    assert await get(bot.port, "/readyz") == (200, "ready\n")


async def test_readyz_names_a_platform_that_stopped(bot: Running) -> None:
    await bot.platform.stop()
    assert await get(bot.port, "/readyz") == (503, "telegram: not connected\n")

"""The real python-telegram-bot against FakeTelegram: polling, mentions, 429, webhook secret."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from telegram import Update
from telegram.error import BadRequest, RetryAfter
from telegram.ext import (
    Application,
    ApplicationBuilder,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    filters,
)

from tests.fakes.fixtures import fake_telegram, free_port  # noqa: F401  (pytest fixtures)
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_wire import post_webhook_update

WAIT_SECONDS = 5


async def help_command(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    assert update.effective_message is not None
    await update.effective_message.reply_text("help text")


async def echo(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    assert update.effective_message is not None and update.effective_message.text is not None
    await update.effective_message.reply_text(f"echo: {update.effective_message.text}")


def build_app(fake: FakeTelegram) -> Application:
    app = (
        ApplicationBuilder()
        .token(fake.token)
        .base_url(fake.base_url)
        .base_file_url(fake.base_file_url)
        .build()
    )
    app.add_handler(CommandHandler("help", help_command))
    app.add_handler(MessageHandler(filters.Mention(fake.bot.username), echo))
    return app


@pytest.fixture
async def polling_app(fake_telegram: FakeTelegram) -> AsyncIterator[Application]:  # noqa: F811
    app = build_app(fake_telegram)
    await app.initialize()
    await app.start()
    assert app.updater is not None
    await app.updater.start_polling(poll_interval=0, timeout=1)
    yield app
    await app.updater.stop()
    await app.stop()
    await app.shutdown()


async def test_initialize_reads_bot_identity_from_get_me(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    app = build_app(fake_telegram)
    async with app:
        assert app.bot.username == "compact_bot"
        assert app.bot.id == 999
    assert fake_telegram.calls[0].method == "getMe"


async def test_polled_help_command_gets_a_reply(
    fake_telegram: FakeTelegram,  # noqa: F811
    polling_app: Application,
) -> None:
    fake_telegram.push_update(
        fake_telegram.group_message("/help@compact_bot", thread_id=7, is_forum=True)
    )
    sent = await asyncio.wait_for(fake_telegram.sent.get(), WAIT_SECONDS)
    assert sent.text == "help text"
    assert sent.chat_id == -1001
    assert sent.thread_id == 7
    assert sent.params["reply_parameters"]["message_id"] > 0


async def test_polled_mention_gets_an_echo(
    fake_telegram: FakeTelegram,  # noqa: F811
    polling_app: Application,
) -> None:
    fake_telegram.push_update(fake_telegram.group_message("hi", mention_bot=True))
    sent = await asyncio.wait_for(fake_telegram.sent.get(), WAIT_SECONDS)
    assert sent.text == "echo: @compact_bot hi"


async def test_unaddressed_group_message_is_ignored_and_offset_confirmed(
    fake_telegram: FakeTelegram,  # noqa: F811
    polling_app: Application,
) -> None:
    quiet = fake_telegram.group_message("just chatting")
    fake_telegram.push_update(quiet)
    fake_telegram.push_update(fake_telegram.group_message("/help"))
    sent = await asyncio.wait_for(fake_telegram.sent.get(), WAIT_SECONDS)
    assert sent.text == "help text"
    assert len(fake_telegram.sent_log) == 1


@pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")
async def test_rate_limit_surfaces_as_retry_after(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    fake_telegram.fail_next("sendMessage", 429, "Too Many Requests: retry after 3", retry_after=3)
    async with build_app(fake_telegram) as app:
        with pytest.raises(RetryAfter) as caught:
            await app.bot.send_message(chat_id=-1001, text="x")
        await app.bot.send_message(chat_id=-1001, text="second try")
    assert caught.value.retry_after == 3
    assert [s.text for s in fake_telegram.sent_log] == ["second try"]


async def test_unbalanced_html_is_rejected_like_telegram(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    async with build_app(fake_telegram) as app:
        with pytest.raises(BadRequest, match="parse entities"):
            await app.bot.send_message(chat_id=-1001, text="<b>open", parse_mode="HTML")
        message = await app.bot.send_message(chat_id=-1001, text="<b>ok</b>", parse_mode="HTML")
    assert message.text == "ok"


async def test_chat_member_statuses_parse(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    fake_telegram.set_chat_member(-1001, 5, "administrator")
    fake_telegram.set_chat_member(-1001, 6, "creator")
    async with build_app(fake_telegram) as app:
        admin = await app.bot.get_chat_member(-1001, 5)
        owner = await app.bot.get_chat_member(-1001, 6)
        plain = await app.bot.get_chat_member(-1001, 7)
        admins = await app.bot.get_chat_administrators(-1001)
    assert (admin.status, owner.status, plain.status) == ("administrator", "creator", "member")
    assert {m.user.id for m in admins} == {5, 6}


async def test_webhook_accepts_secret_and_rejects_missing_one(
    fake_telegram: FakeTelegram,  # noqa: F811
    free_port: int,  # noqa: F811
) -> None:
    app = build_app(fake_telegram)
    await app.initialize()
    await app.start()
    assert app.updater is not None
    await app.updater.start_webhook(
        listen="127.0.0.1",
        port=free_port,
        url_path="tg-hook",
        webhook_url="https://example.invalid/tg-hook",
        secret_token="s3cret",
    )
    try:
        url = f"http://127.0.0.1:{free_port}/tg-hook"
        update = fake_telegram.group_message("/help")
        assert await post_webhook_update(url, update) == 403
        assert await post_webhook_update(url, update, secret="wrong") == 403
        assert await post_webhook_update(url, update, secret="s3cret") == 200
        sent = await asyncio.wait_for(fake_telegram.sent.get(), WAIT_SECONDS)
        assert sent.text == "help text"
        assert fake_telegram.webhook["secret_token"] == "s3cret"
    finally:
        await app.updater.stop()
        await app.stop()
        await app.shutdown()


def test_group_message_entities_use_utf16_offsets(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    update = fake_telegram.group_message("😀 @someone /x", text_mentions={"😀": 42})
    entities = update["message"]["entities"]
    assert {"type": "mention", "offset": 3, "length": 8} in entities
    assert entities[0]["type"] == "text_mention" and entities[0]["length"] == 2


def test_plain_topic_message_carries_topic_creation_not_a_reply(
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    update = fake_telegram.group_message("hi", thread_id=3, is_forum=True)
    reply = update["message"]["reply_to_message"]
    assert "forum_topic_created" in reply
    assert reply["from"]["id"] != fake_telegram.bot.id

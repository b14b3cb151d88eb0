"""Forged and fuzzed platform input: webhook updates without the secret, fuzzed Telegram
updates through gating and the gateway, and fuzzed message texts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from telegram import Update

from compactbot.adapters.telegram_gating import (
    Addressing,
    BotSelf,
    addressing,
    migration,
    skip_reason,
    to_inbound,
)
from compactbot.bot.app import App
from compactbot.bot.commands.router import parse_command
from compactbot.bot.events import InboundMessage
from compactbot.bot.settings.config import Config
from compactbot.compression.forgery import neutralise
from tests.fakes.fixtures import fake_telegram, free_port  # noqa: F401  (pytest fixtures)
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_wire import post_webhook_update
from tests.harness import RecordingAdapter, group_message, make_config
from tests.reliability.hostile_rig import telegram_bot, texts_stored
from tests.reliability.rig import EchoLLM

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")


async def test_forged_webhook_updates_without_the_secret_are_refused_and_not_stored(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    free_port: int,  # noqa: F811
) -> None:
    env = {
        "TELEGRAM_WEBHOOK_URL": "https://bot.example.invalid/tg/hook",
        "TELEGRAM_WEBHOOK_LISTEN": f"127.0.0.1:{free_port}",
        "TELEGRAM_WEBHOOK_SECRET": "the-Real-secret_42",
    }
    async with FakeOpenAI() as llm, telegram_bot(tmp_path, fake_telegram, llm, env) as app:
        url = f"http://127.0.0.1:{free_port}/tg/hook"
        for secret in (None, "", "wrong", "the-Real-secret_4", "THE-REAL-SECRET_42"):
            update = fake_telegram.group_message("/new", mention_bot=True)
            assert await post_webhook_update(url, update, secret=secret) == 403
        await app.gateway.join()
        assert await texts_stored(app, "telegram:-1001") == []
        assert await app.services.store.list_chats() == []
        assert fake_telegram.sent_log == [] and llm.completions == []


ME = BotSelf(id=999, username="compact_bot")
_ids = st.integers(min_value=-(2**52), max_value=2**52)
_users = st.fixed_dictionaries(
    {"id": _ids, "is_bot": st.booleans(), "first_name": st.text(max_size=20)},
    optional={"username": st.text(max_size=20), "last_name": st.text(max_size=20)},
)
_chats = st.fixed_dictionaries(
    {"id": _ids, "type": st.sampled_from(["private", "group", "supergroup", "channel", "x"])},
    optional={"title": st.text(max_size=20), "is_forum": st.booleans()},
)
_entities = st.lists(
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["mention", "bot_command", "text_mention", "bold", "zzz"]),
            "offset": st.integers(-3, 60),
            "length": st.integers(-3, 60),
        },
        optional={"user": _users},
    ),
    max_size=4,
)
_text = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["/compress@compact_bot", "@compact_bot hi", "/help@other_bot", "@x_bot"]),
)
_base_message = {"message_id": _ids, "date": st.integers(0, 2**31), "chat": _chats}
_reply = st.fixed_dictionaries(
    _base_message, optional={"from": _users, "text": _text, "forum_topic_created": st.just({})}
)
_messages = st.fixed_dictionaries(
    _base_message,
    optional={
        "from": _users,
        "text": _text,
        "entities": _entities,
        "message_thread_id": _ids,
        "is_topic_message": st.booleans(),
        "reply_to_message": _reply,
        "sender_chat": _chats,
        "migrate_to_chat_id": _ids,
        "migrate_from_chat_id": _ids,
    },
)
_text_messages = st.fixed_dictionaries(
    {**_base_message, "from": _users, "text": _text},
    optional={
        "entities": _entities,
        "message_thread_id": _ids,
        "is_topic_message": st.booleans(),
        "reply_to_message": _reply,
        "sender_chat": _chats,
    },
)
_updates = st.fixed_dictionaries(
    {"update_id": st.integers(0, 2**31)},
    optional={"message": _messages, "edited_message": _messages, "channel_post": _messages},
)
# Mostly text messages, so most examples get past PTB's parsing and our skip rules.
_text_updates = st.fixed_dictionaries(
    {"update_id": st.integers(0, 2**31), "message": _text_messages}
)
_garbage = st.dictionaries(
    st.sampled_from(["update_id", "message", "chat", "text", "from", "entities"]),
    st.one_of(st.none(), st.integers(), st.text(max_size=10), st.lists(st.integers(), max_size=3)),
)


def gate(data: dict[str, Any]) -> InboundMessage | None:
    """What the Telegram adapter would hand the gateway for this raw update, if anything."""
    try:
        update = Update.de_json(data, None)
    except Exception:
        return None  # PTB rejects it before any of our code runs
    if update is None or skip_reason(update) is not None:
        return None
    message = update.message
    assert message is not None
    if migration(message) is not None:
        return None
    decision = addressing(message, ME)
    if decision is Addressing.NOT_FOR_US:
        return None
    return to_inbound(message, update.update_id, addressed=decision is Addressing.DIRECT)


@contextlib.contextmanager
def app_on_its_own_loop(config: Config) -> Iterator[tuple[asyncio.Runner, App]]:
    """Hypothesis drives sync tests; one loop and one App serve every example."""
    with asyncio.Runner() as runner:
        app = App(config, llm=EchoLLM())
        runner.run(app.start())
        try:
            yield runner, app
        finally:
            runner.run(app.close())


def test_fuzzed_telegram_updates_never_crash_gating_or_the_gateway(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    config = make_config(tmp_path_factory.mktemp("fuzz-telegram"))
    seen_updates: set[str | None] = set()
    with app_on_its_own_loop(config) as (runner, app):

        async def feed(inbound: InboundMessage) -> None:
            before = await texts_stored(app, inbound.chat_key)
            await app.gateway.handle(inbound, RecordingAdapter(platform="telegram"))
            await app.gateway.join()
            added = len(await texts_stored(app, inbound.chat_key)) - len(before)
            # A redelivered update id (hypothesis repeats them) must not be stored twice.
            text = neutralise(inbound.text)  # what the gateway stores (SPEC 16)
            ignored = (
                inbound.update_id in seen_updates
                or not text.strip()
                or parse_command(text) is not None
            )
            seen_updates.add(inbound.update_id)
            assert added == 0 if ignored else added >= 1

        @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.one_of(_text_updates, _text_updates, _text_updates, _updates, _garbage))
        def check(data: dict[str, Any]) -> None:
            inbound = gate(data)
            if inbound is not None:
                runner.run(feed(inbound))

        check()


def test_fuzzed_message_texts_never_crash_the_gateway_nor_store_ignored_ones(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    config = make_config(tmp_path_factory.mktemp("fuzz-gateway"))
    counter = iter(range(10**9))
    with app_on_its_own_loop(config) as (runner, app):

        async def feed(text: str, addressed: bool, is_group: bool) -> None:
            n = next(counter)
            # A fresh author each time: the per-member rate limit is not under test here.
            message = group_message(text, author=f"U{n}", addressed=addressed, is_group=is_group)
            before = await texts_stored(app)
            await app.gateway.handle(message, RecordingAdapter())
            await app.gateway.join()
            new = (await texts_stored(app))[len(before) :]
            text = neutralise(text)  # what the gateway stores (SPEC 16)
            if not text.strip() or parse_command(text) is not None:
                assert new == []
            else:
                content = f"[U{n}] {text}" if is_group else text
                assert new[0] == content
                assert len(new) == (2 if addressed else 1)  # the reply is stored too

        @settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
        @given(st.text(max_size=200), st.booleans(), st.booleans())
        def check(text: str, addressed: bool, is_group: bool) -> None:
            runner.run(feed(text, addressed, is_group))

        check()

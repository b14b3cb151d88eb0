"""Each step of the ordered ingress on its own (aiogram-style: one small step, one test)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from compactbot.bot.events import InboundMessage
from compactbot.bot.ingress.chat_order import ChatOrder
from compactbot.bot.ingress.limits import RateLimiter, member_key
from compactbot.bot.ingress.steps import (
    Stored,
    admin_in_update,
    allowed,
    deliver,
    rule_authors,
    scope_user,
    stored_row,
)
from compactbot.bot.settings import chat_settings
from compactbot.bot.settings.config import Config
from compactbot.bot.store import SqliteStore
from compactbot.compression.message_hints import message_hints
from compactbot.compression.tokens import counter_for
from tests.harness import RecordingAdapter, group_message

CONFIG = Config()
COUNTER = counter_for(None)


def settings(**raw: str) -> chat_settings.ChatSettings:
    return chat_settings.resolve(raw, None, CONFIG)


def test_allow_list_admits_a_listed_chat_its_threads_and_the_console() -> None:
    assert allowed("telegram:-100", ["telegram:-100"])
    assert allowed("telegram:-100:7", ["telegram:-100"])
    assert not allowed("telegram:-1000", ["telegram:-100"])
    assert allowed("console:main", [])
    assert allowed("discord:5", ["*"])


def test_per_user_scope_gives_each_member_a_session_of_their_own() -> None:
    message = group_message("hi")
    assert scope_user(message, settings(memory_scope="per_user")) == message.author_id
    assert scope_user(message, settings()) is None
    assert (
        scope_user(dataclasses.replace(message, is_group=False), settings(memory_scope="per_user"))
        is None
    )


def test_shared_group_rows_are_attributed_and_blank_text_is_not_stored() -> None:
    row = stored_row(group_message("the id is 42"), settings(), COUNTER)
    assert row is not None and row.content == "[Alice] the id is 42" and row.tokens > 0
    assert stored_row(group_message("   "), settings(), COUNTER) is None


def test_deliver_applies_activation_to_unaddressed_messages() -> None:
    message = group_message("jarvis, is it red?", addressed=False)
    assert not deliver(message, RecordingAdapter(), settings(), COUNTER, known_chat=True).addressed
    keyword = settings(activation="keyword", keyword="jarvis")
    delivery = deliver(message, RecordingAdapter(), keyword, COUNTER, known_chat=False)
    assert delivery.addressed and delivery.item.upsert_chat


def test_deliver_drops_another_bots_command_but_keeps_its_dedup_mark() -> None:
    delivery = deliver(
        group_message("/weather berlin", update_id="9"),
        RecordingAdapter(),
        settings(),
        COUNTER,
        known_chat=True,
    )
    assert delivery.command is None and delivery.item.message is None
    assert delivery.item.update_id == "9" and not delivery.addressed


def test_deliver_routes_our_commands_without_storing_them() -> None:
    delivery = deliver(
        group_message("/status"), RecordingAdapter(), settings(), COUNTER, known_chat=True
    )
    assert delivery.command is not None and delivery.command.name == "status"
    assert delivery.item.message is None


async def test_member_rate_window_is_the_parent_chats_private_chats_included(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "limits.db") as store:
        limiter = RateLimiter(store, clock=lambda: 0.0)
        message = group_message("hi")
        topic = dataclasses.replace(message, thread_id="7")
        assert member_key(topic) == member_key(message)
        assert await limiter.allow(member_key(message), 1)
        assert not await limiter.allow(member_key(topic), 1)  # a new topic starts nothing afresh
        private = dataclasses.replace(message, chat_id="dm", is_group=False)
        assert await limiter.allow(member_key(private), 1)
        assert not await limiter.allow(member_key(private), 1)


async def test_chat_order_serialises_one_chat_and_frees_idle_chats() -> None:
    order = ChatOrder()
    log: list[str] = []
    release = asyncio.Event()

    async def first() -> None:
        async with order.holding("b"):
            log.append("first in")
            await release.wait()
            log.append("first out")

    async def second(chat_key: str) -> None:
        async with order.holding(chat_key):
            log.append(f"{chat_key} in")

    tasks = [asyncio.create_task(first())]
    await asyncio.sleep(0)
    tasks += [asyncio.create_task(second("b")), asyncio.create_task(second("a"))]
    await asyncio.sleep(0)
    assert log == ["first in", "a in"]  # another chat does not wait
    release.set()
    await asyncio.gather(*tasks)
    assert log == ["first in", "a in", "first out", "b in"]
    assert order.chats_in_use == 0


async def test_the_platform_is_asked_about_an_author_only_when_the_analysis_reads_a_rule(
    tmp_path: Path,
) -> None:
    asked: list[str] = []
    passed: list[Stored] = []

    async def platform_says_yes(message: InboundMessage, _adapter: object) -> bool:
        asked.append(message.text)
        return True

    async def next_step(stored: Stored) -> None:
        passed.append(stored)

    async with SqliteStore(tmp_path / "admins.db") as store:
        step = rule_authors(store, platform_says_yes, next_step)

        async def stored_admin(message: InboundMessage) -> bool | None:
            delivery = deliver(
                message,
                RecordingAdapter(),
                settings(),
                COUNTER,
                known_chat=False,
                author_admin=admin_in_update(message),
            )
            [result] = await store.ingest([delivery.item])
            assert result.session is not None and result.message_id is not None
            await step(Stored(delivery, result.session, result.message_id, result.states_rule))
            [row] = await store.load_messages(result.session.id, [result.message_id])
            # The store analysed the row once, as it wrote it; the step read that analysis.
            assert row.hints == message_hints(delivery.item.message.to_openai())
            return row.author_admin

        rule = "Rule: nobody deploys on Fridays."
        assert await stored_admin(group_message("lunch was great today")) is None
        assert await stored_admin(group_message(rule)) is True
        assert asked == [rule]
        said = dataclasses.replace(group_message("Rule: no memes in here."), is_admin=False)
        assert await stored_admin(said) is False
        private = dataclasses.replace(group_message("Rule: tabs, not spaces."), is_group=False)
        assert await stored_admin(private) is True
        assert asked == [rule] and len(passed) == 4

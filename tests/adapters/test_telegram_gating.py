"""The pure Telegram decisions: who a message addresses, topics, migration, what is skipped."""

from __future__ import annotations

from typing import Any

import pytest
from telegram import Update

from compactbot.adapters.telegram_gating import (
    Addressing,
    BotSelf,
    addressing,
    migration,
    skip_reason,
    to_inbound,
)
from tests.fakes.telegram_server import FakeTelegram

ME = BotSelf(id=999, username="compact_bot")


@pytest.fixture
def tg() -> FakeTelegram:
    """Only the update builders are used; the server is never started."""
    return FakeTelegram(bot_id=ME.id, bot_username=ME.username)


def update(data: dict[str, Any]) -> Update:
    return Update.de_json(data, None)


def decide(data: dict[str, Any]) -> Addressing:
    message = update(data).message
    assert message is not None
    return addressing(message, ME)


def test_plain_group_talk_is_observed(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("lunch at noon?")) is Addressing.OBSERVE


def test_mention_of_the_bot_addresses_it_case_insensitively(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("@Compact_Bot what did we decide?")) is Addressing.DIRECT


def test_text_mention_of_the_bot_id_addresses_it(tg: FakeTelegram) -> None:
    data = tg.group_message("CompactBot, summarize", text_mentions={"CompactBot": ME.id})
    assert decide(data) is Addressing.DIRECT


def test_reply_to_the_bot_addresses_it(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("and then?", reply_to_bot=True)) is Addressing.DIRECT


def test_topic_message_is_not_a_reply_to_the_topic_creator(tg: FakeTelegram) -> None:
    data = tg.group_message("hello topic", thread_id=7, is_forum=True, user_id=ME.id)
    assert decide(data) is Addressing.OBSERVE


def test_private_chat_always_addresses_the_bot(tg: FakeTelegram) -> None:
    assert decide(tg.private_message("hi")) is Addressing.DIRECT


def test_command_without_bot_name_addresses_the_bot(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("/status")) is Addressing.DIRECT


def test_command_for_this_bot_addresses_it(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("/compress@compact_bot focus")) is Addressing.DIRECT


def test_command_for_another_bot_is_not_for_us(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("/help@other_bot")) is Addressing.NOT_FOR_US


def test_mention_of_only_other_bots_is_not_for_us(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("@other_bot draw a cat")) is Addressing.NOT_FOR_US


def test_mention_of_a_person_is_observed(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("@alice_w and @other_bot look")) is Addressing.MENTIONS_OTHERS


def test_mention_of_us_wins_over_other_bots(tg: FakeTelegram) -> None:
    assert decide(tg.group_message("@other_bot @compact_bot compare")) is Addressing.DIRECT


def test_forum_topic_message_gets_its_own_thread_id(tg: FakeTelegram) -> None:
    message = update(tg.group_message("hi", thread_id=42, is_forum=True)).message
    assert message is not None
    inbound = to_inbound(message, 5, addressed=False)
    assert inbound.thread_id == "42"
    assert inbound.chat_key == "telegram:-1001:42"
    assert inbound.reply_to is None  # the topic's creation notice is no reply


def test_plain_reply_thread_id_is_not_a_topic(tg: FakeTelegram) -> None:
    data = tg.group_message("hi", reply_to_bot=True)
    data["message"]["message_thread_id"] = 1001  # a non-forum reply chain carries one too
    message = update(data).message
    assert message is not None
    inbound = to_inbound(message, 6, addressed=True)
    assert inbound.thread_id is None
    assert inbound.reply_to is not None


def test_inbound_carries_ids_names_and_title(tg: FakeTelegram) -> None:
    data = tg.group_message("hi", user_id=5, first_name="Bob", chat_title="Dev chat")
    data["message"]["from"]["last_name"] = "Stone"
    message = update(data).message
    assert message is not None
    inbound = to_inbound(message, 77, addressed=False)
    assert (inbound.chat_id, inbound.author_id, inbound.author_name) == ("-1001", "5", "Bob Stone")
    assert (inbound.update_id, inbound.chat_title, inbound.is_group) == ("77", "Dev chat", True)
    assert inbound.platform_message_id == str(data["message"]["message_id"])


def test_username_is_the_name_when_there_is_no_first_name(tg: FakeTelegram) -> None:
    data = tg.group_message("hi", username="bobby")
    data["message"]["from"]["first_name"] = ""
    message = update(data).message
    assert message is not None
    assert to_inbound(message, 1, addressed=False).author_name == "@bobby"


def test_edited_messages_and_channel_posts_are_skipped(tg: FakeTelegram) -> None:
    edited = tg.group_message("fixed typo")
    edited["edited_message"] = edited.pop("message")
    post = tg.group_message("news")
    post["channel_post"] = post.pop("message")
    assert skip_reason(update(edited)) == "edited message"
    assert skip_reason(update(post)) == "channel post"


def test_messages_without_text_or_media_are_skipped(tg: FakeTelegram) -> None:
    data = tg.group_message("x")
    del data["message"]["text"]
    data["message"]["sticker"] = {
        "file_id": "s1",
        "file_unique_id": "u1",
        "type": "regular",
        "width": 90,
        "height": 90,
        "is_animated": False,
        "is_video": False,
    }
    assert skip_reason(update(data)) == "not a text message"


def test_captioned_photo_is_a_message_addressed_by_its_caption(tg: FakeTelegram) -> None:
    data = tg.media_message("what is this?", photo=b"png", mention_bot=True)
    assert skip_reason(update(data)) is None
    message = update(data).message
    assert message is not None
    assert addressing(message, BotSelf(tg.bot.id, tg.bot.username)) is Addressing.DIRECT


def test_migration_maps_old_chat_key_to_new(tg: FakeTelegram) -> None:
    for data in (tg.migrate_message(-5, -1005), tg.migrate_message(-5, -1005, in_new_chat=True)):
        message = update(data).message
        assert message is not None
        assert skip_reason(update(data)) is None
        assert migration(message) == ("telegram:-5", "telegram:-1005")

"""The Discord gating rules as pure functions of a message's facts."""

from __future__ import annotations

import dataclasses

from compactbot.adapters.discord_gating import DiscordFacts, ignore_reason, model_text, to_inbound
from compactbot.bot.ingress.activation import activated

BOT = "900"
FACTS = DiscordFacts(
    message_id="1",
    channel_id="70",
    parent_id=None,
    is_dm=False,
    author_id="10",
    author_name="alice",
    author_is_bot=False,
    is_system=False,
    text="the build is red again",
)


def facts(**changes: object) -> DiscordFacts:
    return dataclasses.replace(FACTS, **changes)  # type: ignore[arg-type]


def addressed(
    message: DiscordFacts, activation: str = "mention", keyword: str | None = None
) -> bool:
    inbound = to_inbound(message, bot_id=BOT)
    return inbound.addressed or activated(
        activation,  # type: ignore[arg-type]
        keyword,
        inbound.text,
        mentions_others=inbound.mentions_others,
    )


def test_plain_group_message_is_observed_under_mention_activation() -> None:
    assert not addressed(FACTS)


def test_dm_is_addressed_and_not_a_group() -> None:
    inbound = to_inbound(facts(is_dm=True), bot_id=BOT)
    assert inbound.addressed and not inbound.is_group


def test_reply_to_the_bot_is_addressed() -> None:
    assert addressed(facts(reply_to_id="5", reply_to_author_id=BOT))


def test_reply_to_someone_else_is_not_addressed() -> None:
    assert not addressed(facts(reply_to_id="5", reply_to_author_id="11"))


def test_plain_slash_text_is_addressed() -> None:
    assert addressed(facts(text="/status"))


def test_always_activation_answers_but_not_messages_for_someone_else() -> None:
    assert addressed(FACTS, "always")
    assert not addressed(facts(text="<@11> look", mentions=(("11", "bob"),)), "always")


def test_keyword_activation_needs_the_whole_word() -> None:
    assert addressed(facts(text="Jarvis, why is it red?"), "keyword", "jarvis")
    assert not addressed(facts(text="jarvisfoo"), "keyword", "jarvis")


def test_thread_is_its_own_chat_under_the_parent_id() -> None:
    inbound = to_inbound(facts(channel_id="71", parent_id="70"), bot_id=BOT)
    assert (inbound.chat_id, inbound.thread_id) == ("70", "71")
    assert inbound.parent_chat_key == "discord:70"


def test_model_text_drops_the_bot_mention_and_names_other_users() -> None:
    message = facts(text=f"<@{BOT}> ask <@!11> about <@12>", mentions=((BOT, "bot"), ("11", "bob")))
    assert model_text(message, BOT) == "ask @bob about <@12>"


def test_own_other_bot_and_system_messages_are_ignored() -> None:
    assert ignore_reason(facts(author_id=BOT), BOT) == "own message"
    assert ignore_reason(facts(author_is_bot=True), BOT) == "other bot"
    assert ignore_reason(facts(is_system=True), BOT) == "system message"
    assert ignore_reason(FACTS, BOT) is None

"""Builders for realistic Telegram Update dicts, with the entities Telegram itself would add."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Telegram usernames are 5–32 characters; a shorter "@xy" never becomes a mention entity.
_MENTION_RE = re.compile(r"(?<![\w@])@[A-Za-z][A-Za-z0-9_]{4,31}\b")
_COMMAND_RE = re.compile(r"^/[A-Za-z0-9_]{1,32}(?:@[A-Za-z][A-Za-z0-9_]{4,31})?")
TOPIC_ICON_COLOR = 0x6FB9F0  # one of the six colours the Bot API allows for forum topics


def utf16_len(s: str) -> int:
    """Telegram entity offsets and lengths are in UTF-16 code units."""
    return len(s.encode("utf-16-le")) // 2


@dataclass(frozen=True, slots=True)
class BotIdentity:
    """The bot as Telegram describes it to other users."""

    id: int
    username: str
    first_name: str

    def user(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "is_bot": True,
            "first_name": self.first_name,
            "username": self.username,
        }


def user_dict(user_id: int, first_name: str, username: str | None = None) -> dict[str, Any]:
    user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
    if username:
        user["username"] = username
    return user


def chat_dict(chat_id: int, *, title: str = "Test group", is_forum: bool = False) -> dict[str, Any]:
    """A chat: positive ids are private, -100… supergroups, other negatives basic groups."""
    if chat_id > 0:
        return {"id": chat_id, "type": "private", "first_name": f"User{chat_id}"}
    kind = "supergroup" if str(chat_id).startswith("-100") else "group"
    chat: dict[str, Any] = {"id": chat_id, "type": kind, "title": title}
    if is_forum:
        chat["is_forum"] = True
    return chat


def entities_for(
    text: str, text_mentions: Mapping[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """bot_command, mention and text_mention entities, as Telegram computes them."""
    entities: list[dict[str, Any]] = []
    if command := _COMMAND_RE.match(text):
        entities.append({"type": "bot_command", "offset": 0, "length": utf16_len(command.group())})
    for mention in _MENTION_RE.finditer(text):
        entities.append(
            {
                "type": "mention",
                "offset": utf16_len(text[: mention.start()]),
                "length": utf16_len(mention.group()),
            }
        )
    for fragment, user in (text_mentions or {}).items():
        index = text.find(fragment)
        if index >= 0:
            entities.append(
                {
                    "type": "text_mention",
                    "offset": utf16_len(text[:index]),
                    "length": utf16_len(fragment),
                    "user": user,
                }
            )
    return sorted(entities, key=lambda e: e["offset"])


def message_dict(
    *,
    message_id: int,
    chat: dict[str, Any],
    sender: dict[str, Any],
    text: str,
    thread_id: int | None = None,
    reply_to: dict[str, Any] | None = None,
    text_mentions: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "message_id": message_id,
        "date": int(time.time()),
        "chat": chat,
        "from": sender,
        "text": text,
    }
    if entities := entities_for(text, text_mentions):
        message["entities"] = entities
    if thread_id is not None:
        message["message_thread_id"] = thread_id
        if chat.get("is_forum"):
            message["is_topic_message"] = True
    if reply_to is not None:
        message["reply_to_message"] = reply_to
    return message


def bot_reply_dict(bot: BotIdentity, chat: dict[str, Any], message_id: int) -> dict[str, Any]:
    """An earlier message by the bot, for `reply_to_message` (a reply to the bot)."""
    return {
        "message_id": message_id,
        "date": int(time.time()) - 60,
        "chat": chat,
        "from": bot.user(),
        "text": "an earlier reply from the bot",
    }


def topic_created_dict(
    chat: dict[str, Any], thread_id: int, creator: dict[str, Any]
) -> dict[str, Any]:
    """The service message Telegram puts in `reply_to_message` of every plain topic message.

    Adapters must not read it as a reply: it comes from whoever created the topic.
    """
    return {
        "message_id": thread_id,
        "date": int(time.time()) - 3600,
        "chat": chat,
        "from": creator,
        "message_thread_id": thread_id,
        "forum_topic_created": {"name": f"Topic {thread_id}", "icon_color": TOPIC_ICON_COLOR},
        "is_topic_message": True,
    }

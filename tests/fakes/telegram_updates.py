"""Builders for realistic Telegram Update dicts, with the entities Telegram itself would add,
and the FakeTelegram methods that number them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Mapping
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


class UpdateBuilders:
    """Mixed into FakeTelegram: the group, private and migration updates a test pushes, with
    update and message ids from the fake's own counters (its replies share the message ids)."""

    bot: BotIdentity
    _update_ids: Iterator[int]
    _message_ids: Iterator[int]

    def next_update_id(self) -> int:
        return next(self._update_ids)

    def next_message_id(self) -> int:
        return next(self._message_ids)

    def group_message(
        self,
        text: str,
        *,
        chat_id: int = -1001,
        user_id: int = 1,
        first_name: str = "Alice",
        username: str | None = None,
        thread_id: int | None = None,
        is_forum: bool = False,
        reply_to_bot: bool = False,
        mention_bot: bool = False,
        text_mentions: Mapping[str, int] | None = None,
        update_id: int | None = None,
        chat_title: str = "Test group",
        reply_to: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A group Update; `text_mentions` maps a fragment of `text` to the user id it names;
        `reply_to` is an earlier update's message this one replies to."""
        if mention_bot and f"@{self.bot.username}" not in text:
            text = f"@{self.bot.username} {text}"
        chat = chat_dict(chat_id, title=chat_title, is_forum=is_forum)
        sender = user_dict(user_id, first_name, username)
        replied: dict[str, Any] | None = dict(reply_to) if reply_to is not None else None
        if reply_to_bot:
            replied = bot_reply_dict(self.bot, chat, self.next_message_id())
        elif replied is None and is_forum and thread_id is not None:
            replied = topic_created_dict(chat, thread_id, sender)
        mentioned = {frag: user_dict(uid, frag) for frag, uid in (text_mentions or {}).items()}
        message = message_dict(
            message_id=self.next_message_id(),
            chat=chat,
            sender=sender,
            text=text,
            thread_id=thread_id,
            reply_to=replied,
            text_mentions=mentioned,
        )
        return {"update_id": update_id or self.next_update_id(), "message": message}

    def private_message(
        self,
        text: str,
        *,
        user_id: int = 1,
        first_name: str = "Alice",
        username: str | None = None,
        update_id: int | None = None,
    ) -> dict[str, Any]:
        sender = user_dict(user_id, first_name, username)
        chat = {"id": user_id, "type": "private", "first_name": first_name}
        message = message_dict(
            message_id=self.next_message_id(), chat=chat, sender=sender, text=text
        )
        return {"update_id": update_id or self.next_update_id(), "message": message}

    def migrate_message(
        self, old_chat_id: int, new_chat_id: int, *, in_new_chat: bool = False
    ) -> dict[str, Any]:
        """The service message of a group turning supergroup (or its twin in the new chat)."""
        message: dict[str, Any] = {
            "message_id": self.next_message_id(),
            "date": int(time.time()),
            "from": user_dict(1, "Alice"),
        }
        if in_new_chat:
            message["chat"] = chat_dict(new_chat_id)
            message["migrate_from_chat_id"] = old_chat_id
        else:
            message["chat"] = {"id": old_chat_id, "type": "group", "title": "Test group"}
            message["migrate_to_chat_id"] = new_chat_id
        return {"update_id": self.next_update_id(), "message": message}

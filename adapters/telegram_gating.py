"""Pure decisions about one Telegram update: skip it, migrate a chat, or whom it addresses.

Like PTB's `BaseHandler.check_update`, nothing here awaits or touches the network: the platform
(`adapters/telegram.py`) asks these functions and then acts.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

from telegram import Chat, Message, MessageEntity, Update

from compactbot.bot.events import Attachment, InboundMessage, chat_key

PLATFORM = "telegram"
# Telegram requires every bot username to end in "bot"; a mention of one is a command to it.
BOT_USERNAME_SUFFIX = "bot"
_ADDRESS_ENTITIES = (MessageEntity.MENTION, MessageEntity.TEXT_MENTION, MessageEntity.BOT_COMMAND)


@dataclass(frozen=True, slots=True)
class BotSelf:
    """Who "us" is, from getMe: mentions, replies and `/cmd@name` are matched against it."""

    id: int
    username: str

    def is_me(self, username: str) -> bool:
        return username.lstrip("@").casefold() == self.username.casefold()


class Addressing(enum.Enum):
    """How a message relates to the bot before per-chat activation is applied."""

    DIRECT = "direct"  # private chat, @mention, reply to the bot, or a command for us
    OBSERVE = "observe"  # group talk: stored as context; activation may still address it
    MENTIONS_OTHERS = "mentions_others"  # talk to someone else: stored, never activated
    NOT_FOR_US = "not_for_us"  # /cmd@other_bot, or @mentions of other bots only: not stored


def skip_reason(update: Update) -> str | None:
    """Why this update is not a message for the gateway at all; None when it is one."""
    if update.edited_message is not None or update.edited_channel_post is not None:
        return "edited message"
    if update.channel_post is not None:
        return "channel post"
    message = update.message
    if message is None:
        return "not a message"
    if migration(message) is not None:
        return None
    if message.text is None and not has_media(message):
        return "not a text message"
    if message.from_user is None:
        return "no sender"
    return None


def migration(message: Message) -> tuple[str, str] | None:
    """(old chat key, new chat key) when a group became a supergroup; its id changed."""
    if message.migrate_to_chat_id is not None:
        old, new = message.chat.id, message.migrate_to_chat_id
    elif message.migrate_from_chat_id is not None:
        old, new = message.migrate_from_chat_id, message.chat.id
    else:
        return None
    return chat_key(PLATFORM, str(old)), chat_key(PLATFORM, str(new))


def addressing(message: Message, me: BotSelf) -> Addressing:
    """Whether the message speaks to us; `/cmd@other_bot` and other bots' @mentions do not."""
    if message.chat.type == Chat.PRIVATE or _replies_to_me(message, me):
        return Addressing.DIRECT
    other_bots = False
    plain_mention = False
    for entity, text in _entities(message).items():
        if entity.type == MessageEntity.BOT_COMMAND:
            _, _, target = text.partition("@")
            if target and not me.is_me(target):
                if entity.offset == 0:
                    return Addressing.NOT_FOR_US
                continue
            # A bare "/cmd" mid-sentence is talk about a command, not a command to anyone.
            if target or entity.offset == 0:
                return Addressing.DIRECT
        elif entity.type == MessageEntity.MENTION:
            if me.is_me(text):
                return Addressing.DIRECT
            if text.casefold().endswith(BOT_USERNAME_SUFFIX):
                other_bots = True
            else:
                plain_mention = True
        elif entity.user is not None:  # text_mention: a user without a username, by id
            if entity.user.id == me.id:
                return Addressing.DIRECT
            other_bots = other_bots or entity.user.is_bot
            plain_mention = plain_mention or not entity.user.is_bot
    if other_bots and not plain_mention:
        return Addressing.NOT_FOR_US
    return Addressing.MENTIONS_OTHERS if plain_mention else Addressing.OBSERVE


def _entities(message: Message) -> dict[MessageEntity, str]:
    """The addressing entities; none when their UTF-16 offsets split a character (bad input)."""
    kinds: list[str | None] = list(_ADDRESS_ENTITIES)
    try:
        return {**message.parse_entities(kinds), **message.parse_caption_entities(kinds)}
    except UnicodeDecodeError:
        return {}


def to_inbound(
    message: Message, update_id: int, *, addressed: bool, mentions_others: bool = False
) -> InboundMessage:
    """The platform-neutral message; a forum topic becomes a chat of its own via thread_id."""
    chat = message.chat
    author_id, author_name = _author(message)
    # Plain replies in a supergroup also carry message_thread_id; only real topics are chats.
    thread_id = str(message.message_thread_id) if _in_topic(message) else None
    reply = message.reply_to_message
    if reply is not None and _is_topic_root(reply):
        reply = None
    return InboundMessage(
        platform=PLATFORM,
        chat_id=str(chat.id),
        author_id=author_id,
        author_name=author_name,
        text=message.text or message.caption or "",
        addressed=addressed,
        # A chat type this code does not know (Telegram adds some) is a group: admins only.
        is_group=chat.type != Chat.PRIVATE,
        thread_id=thread_id,
        platform_message_id=str(message.message_id),
        update_id=str(update_id),
        reply_to=str(reply.message_id) if reply is not None else None,
        reply_to_text=(reply.text or reply.caption) if reply is not None else None,
        reply_to_author=_author(reply)[1] if reply is not None else None,
        chat_title=chat.title,
        # An anonymous admin posts as the group itself; Telegram only lets admins do that.
        is_admin=True if _sent_as_the_group(message) else None,
        mentions_others=mentions_others,
        attachments=attachments(message),
        language_code=message.from_user.language_code if message.from_user else None,
    )


def has_media(message: Message) -> bool:
    return bool(message.photo) or message.document is not None


def attachments(message: Message) -> tuple[Attachment, ...]:
    """The photo (its largest size) or document of a message, as the gateway sees files."""
    if message.photo:
        largest = message.photo[-1]
        return (Attachment("image", largest.file_id, size_bytes=largest.file_size),)
    document = message.document
    if document is not None:
        kind: Literal["image", "document"] = (
            "image" if (document.mime_type or "").startswith("image/") else "document"
        )
        return (
            Attachment(
                kind,
                document.file_id,
                name=document.file_name,
                mime_type=document.mime_type,
                size_bytes=document.file_size,
            ),
        )
    return ()


def _author(message: Message) -> tuple[str, str]:
    sender_chat = message.sender_chat
    if sender_chat is not None:
        return str(sender_chat.id), sender_chat.title or sender_chat.username or str(sender_chat.id)
    user = message.from_user
    if user is None:
        return "unknown", "someone"
    name = " ".join(part for part in (user.first_name, user.last_name) if part).strip()
    if not name and user.username:
        name = f"@{user.username}"
    return str(user.id), name or str(user.id)


def _sent_as_the_group(message: Message) -> bool:
    return message.sender_chat is not None and message.sender_chat.id == message.chat.id


def _in_topic(message: Message) -> bool:
    return bool(message.is_topic_message) and message.message_thread_id is not None


def _is_topic_root(reply: Message) -> bool:
    """Every message in a forum topic "replies" to the topic's creation notice; that is no reply."""
    return reply.forum_topic_created is not None


def _replies_to_me(message: Message, me: BotSelf) -> bool:
    reply = message.reply_to_message
    if reply is None or _is_topic_root(reply) or reply.from_user is None:
        return False
    return reply.from_user.id == me.id

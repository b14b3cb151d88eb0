"""Decide what a Discord message is to the bot: ignored, observed, or addressed.

`message_facts` reads the few fields that matter off a `discord.Message`; everything after it is a
pure function of those facts, so the gating rules can be tested without a client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import discord

from compactbot.bot.events import Attachment, InboundMessage
from compactbot.bot.ingress.unicode_repair import repair_text

PLATFORM = "discord"
# A user mention and the blanks after it, so "<@bot> hi" becomes "hi", not " hi".
_USER_MENTION_RE = re.compile(r"<@!?(\d+)>([ \t]*)")


@dataclass(frozen=True, slots=True)
class DiscordFacts:
    """What the gating rules need from one Discord message; ids are strings, as in the store."""

    message_id: str
    channel_id: str
    # Set when the channel is a thread: the thread's parent channel.
    parent_id: str | None
    is_dm: bool
    author_id: str
    author_name: str
    author_is_bot: bool
    is_system: bool
    text: str
    # Users mentioned in `text`, by id, with the name to show the model instead of `<@id>`.
    mentions: tuple[tuple[str, str], ...] = ()
    reply_to_id: str | None = None
    reply_to_author_id: str | None = None
    reply_to_text: str | None = None
    reply_to_author: str | None = None
    attachments: tuple[Attachment, ...] = ()
    chat_title: str | None = None
    is_admin: bool | None = None

    @property
    def chat_id(self) -> str:
        # A thread is its own chat under its parent's id, so its settings inherit the parent's.
        return self.parent_id or self.channel_id

    @property
    def thread_id(self) -> str | None:
        return self.channel_id if self.parent_id else None


def message_facts(message: discord.Message) -> DiscordFacts:
    """Read a received message into plain values (no I/O: only the cache discord.py filled)."""
    channel = message.channel
    parent_id = str(channel.parent_id) if isinstance(channel, discord.Thread) else None
    reference = message.reference
    reply_to_id = None
    reply_to_author_id = None
    reply_to_text = reply_to_author = None
    if reference is not None and reference.message_id is not None:
        reply_to_id = str(reference.message_id)
        replied = reference.resolved or reference.cached_message
        if isinstance(replied, discord.Message):
            reply_to_author_id = str(replied.author.id)
            reply_to_text, reply_to_author = replied.content, replied.author.display_name
    return DiscordFacts(
        message_id=str(message.id),
        channel_id=str(channel.id),
        parent_id=parent_id,
        is_dm=message.guild is None,
        author_id=str(message.author.id),
        # JSON may carry lone surrogates, which the UTF-8 store would refuse: repaired here.
        author_name=repair_text(message.author.display_name),
        author_is_bot=message.author.bot,
        is_system=message.is_system(),
        text=repair_text(message.content),
        mentions=tuple((str(user.id), user.display_name) for user in message.mentions),
        reply_to_id=reply_to_id,
        reply_to_author_id=reply_to_author_id,
        reply_to_text=reply_to_text,
        reply_to_author=reply_to_author,
        attachments=tuple(_attachment(a) for a in message.attachments),
        chat_title=_title(channel),
        is_admin=_member_is_admin(message),
    )


def is_admin_permissions(permissions: discord.Permissions) -> bool:
    """Chat admin on Discord: Manage Server or Manage Messages (Administrator implies both)."""
    return permissions.manage_guild or permissions.manage_messages


def ignore_reason(facts: DiscordFacts, bot_id: str) -> str | None:
    """Why the bot must not even store this message, or None to go on."""
    if facts.author_id == bot_id:
        return "own message"
    if facts.author_is_bot:
        return "other bot"  # two bots answering each other would loop and burn tokens
    if facts.is_system:
        return "system message"  # joins, pins, boosts: not conversation
    return None


def mentions_bot(facts: DiscordFacts, bot_id: str) -> bool:
    return any(user_id == bot_id for user_id, _ in facts.mentions)


def addressed_directly(facts: DiscordFacts, bot_id: str) -> bool:
    """A DM, an @mention, a reply to one of the bot's messages, or a plain `/command`."""
    return (
        facts.is_dm
        or mentions_bot(facts, bot_id)
        or facts.reply_to_author_id == bot_id
        or facts.text.lstrip().startswith("/")
    )


def mentions_others(facts: DiscordFacts, bot_id: str) -> bool:
    """Someone other than the bot is @mentioned: activation never makes it a request."""
    return any(user_id != bot_id for user_id, _ in facts.mentions)


def model_text(facts: DiscordFacts, bot_id: str) -> str:
    """The text as the model should read it: our own mention dropped, others as `@name`."""
    names = dict(facts.mentions)

    def replace(match: re.Match[str]) -> str:
        user_id = match.group(1)
        if user_id == bot_id:
            return ""
        return f"@{names[user_id]}{match.group(2)}" if user_id in names else match.group(0)

    return _USER_MENTION_RE.sub(replace, facts.text).strip()


def to_inbound(facts: DiscordFacts, *, bot_id: str) -> InboundMessage:
    """The normalized event; the gateway applies the chat's activation to unaddressed ones."""
    addressed = addressed_directly(facts, bot_id)
    return InboundMessage(
        platform=PLATFORM,
        chat_id=facts.chat_id,
        author_id=facts.author_id,
        author_name=facts.author_name,
        text=model_text(facts, bot_id),
        addressed=addressed,
        is_group=not facts.is_dm,
        thread_id=facts.thread_id,
        platform_message_id=facts.message_id,
        # Discord redelivers MESSAGE_CREATE after a gateway resume; the id makes it a duplicate.
        update_id=facts.message_id,
        reply_to=facts.reply_to_id,
        reply_to_text=facts.reply_to_text,
        reply_to_author=facts.reply_to_author,
        attachments=facts.attachments,
        chat_title=facts.chat_title,
        is_admin=facts.is_admin,
        mentions_others=not addressed and mentions_others(facts, bot_id),
    )


def _attachment(file: discord.Attachment) -> Attachment:
    mime = file.content_type
    kind: Literal["image", "document"] = (
        "image" if (mime or "").startswith("image/") else "document"
    )
    return Attachment(kind, file.url, name=file.filename, mime_type=mime, size_bytes=file.size)


def _title(channel: object) -> str | None:
    if isinstance(channel, discord.Thread) and channel.parent is not None:
        return f"#{channel.parent.name} › {channel.name}"
    name = getattr(channel, "name", None)
    return f"#{name}" if isinstance(name, str) else None


def _member_is_admin(message: discord.Message) -> bool | None:
    """From the cache the message came with; None (ask later) when the author is not a Member."""
    author = message.author
    channel = message.channel
    if not isinstance(author, discord.Member) or isinstance(
        channel, (discord.DMChannel, discord.GroupChannel, discord.PartialMessageable)
    ):
        return None
    return is_admin_permissions(channel.permissions_for(author))

"""The ordered ingress's small steps, each testable alone (aiogram 3's middlewares).

`Gateway.ingest` runs them in this order for every update: allow-list (pure, before anything
is written: a chat the operator has not allowed leaves no trace), settings and session, then
dedup + chat upsert + store in one transaction, then limits for what will be answered.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass

from bot.activation import activated
from bot.chat_settings import ChatSettings
from bot.commands import Command, ignored_command, parse_command
from bot.events import Adapter, InboundMessage
from bot.inbound_text import transcript_text
from bot.limits import RateLimiter
from bot.store.base import IngestItem, NewMessage
from compression.tokens import TokenCounter

ALLOW_EVERY_CHAT = "*"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One inbound update on its way through the ingress, with what the steps learned."""

    message: InboundMessage
    adapter: Adapter
    settings: ChatSettings
    command: Command | None
    # Directly addressed, or made a request by the chat's activation setting.
    addressed: bool
    item: IngestItem


def allowed(chat_key: str, allowed_chats: tuple[str, ...] | list[str]) -> bool:
    """The allow-list: a chat, or any thread under it; the local console is always allowed."""
    if ALLOW_EVERY_CHAT in allowed_chats or chat_key.startswith("console:"):
        return True
    return any(chat_key == item or chat_key.startswith(item + ":") for item in allowed_chats)


def scope_user(message: InboundMessage, settings: ChatSettings) -> str | None:
    """Whose session a message belongs to: the member's own when memory_scope is per_user."""
    if message.is_group and settings.memory_scope == "per_user":
        return message.author_id
    return None


def stored_row(
    message: InboundMessage,
    settings: ChatSettings,
    counter: TokenCounter,
    quote: str | None = None,
) -> NewMessage | None:
    """The transcript row for an ordinary message: in a shared group, attributed by name, with
    the message it replies to quoted and a placeholder per file (read later, in the lane)."""
    if not message.text.strip() and not message.attachments:
        return None
    shared = message.is_group and settings.memory_scope == "shared"
    content = transcript_text(message, shared=shared, quote=quote)
    return NewMessage(
        role="user",
        content=content,
        tokens=counter.count_message({"role": "user", "content": content}),
        author_id=message.author_id,
        author_name=message.author_name,
        platform_message_id=message.platform_message_id,
    )


def deliver(
    message: InboundMessage,
    adapter: Adapter,
    settings: ChatSettings,
    counter: TokenCounter,
    *,
    known_chat: bool,
    quote: str | None = None,
) -> Delivery:
    """Settings and session step: what to store, in which session, and whether to answer."""
    command = parse_command(message.text)
    row = None
    if command is None:
        row = stored_row(message, settings, counter, quote)
    elif ignored_command(command, message):
        command = None  # another bot's command: marked processed, neither stored nor answered
    addressed = message.addressed or activated(
        settings.activation, settings.keyword, message.text, mentions_others=message.mentions_others
    )
    item = IngestItem(
        platform=message.platform,
        update_id=message.update_id,
        chat_key=message.chat_key,
        scope_user=scope_user(message, settings),
        message=row,
        title=message.chat_title,
        parent_key=message.parent_chat_key,
        is_group=message.is_group,
        upsert_chat=not known_chat,
    )
    return Delivery(message, adapter, settings, command, addressed and row is not None, item)


async def rate_limited(
    limiter: RateLimiter, message: InboundMessage, settings: ChatSettings
) -> bool:
    """The limits step for a group member asking faster than `user_rate_limit_per_minute`."""
    if not message.is_group:
        return False  # private chats never touch the shared rate window
    member = (message.chat_key, message.author_id)
    return not await limiter.allow(member, settings.user_rate_limit_per_minute)


class ChatOrder:
    """Per-chat mutual exclusion for the ingress, so concurrent callers cannot interleave one
    chat's updates between a command's commit and its effect. Idle chats hold no lock object."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}
        self._users: dict[str, int] = {}

    @property
    def chats_in_use(self) -> int:
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def holding(self, chat_keys: Iterable[str]) -> AsyncIterator[None]:
        # Sorted, so two batches that share chats always take their locks in the same order.
        keys = sorted(set(chat_keys))
        for key in keys:
            self._users[key] = self._users.get(key, 0) + 1
            self._locks.setdefault(key, asyncio.Lock())
        held: list[str] = []
        try:
            for key in keys:
                await self._locks[key].acquire()
                held.append(key)
            yield
        finally:
            for key in held:
                self._locks[key].release()
            for key in keys:
                self._users[key] -= 1
                if not self._users[key]:
                    del self._users[key], self._locks[key]

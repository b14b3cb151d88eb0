"""The ordered ingress's small steps, each testable alone (aiogram 3's middlewares).

`Gateway.ingest` runs them in this order for every update: allow-list (pure, before anything
is written: a chat the operator has not allowed leaves no trace), settings and session, then
dedup + chat upsert + store in one transaction, then limits for what will be answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from compactbot.bot.commands.router import Command, ignored_command, parse_command
from compactbot.bot.events import Adapter, InboundMessage
from compactbot.bot.ingress.activation import activated
from compactbot.bot.ingress.inbound_text import transcript_text
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.base import IngestItem, NewMessage
from compactbot.compression.features import states_rule
from compactbot.compression.tokens import TokenCounter

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


async def author_admin(
    message: InboundMessage, ask_platform: Callable[[], Awaitable[bool]]
) -> bool | None:
    """Whether the author is a chat admin, kept with the row (only admins set rules, SPEC 16):
    as the update says, else asked of the platform (cached) only when the text states a rule;
    None: not known, which counts as no."""
    if not message.is_group:
        return True
    if message.is_admin is not None:
        return message.is_admin
    return await ask_platform() if states_rule(message.text) else None


def stored_row(
    message: InboundMessage,
    settings: ChatSettings,
    counter: TokenCounter,
    quote: str | None = None,
    author_admin: bool | None = None,
) -> NewMessage | None:
    """The transcript row for an ordinary message: in a shared group, attributed by name, with
    the message it replies to quoted and a placeholder per file (read later, in the lane)."""
    if not message.text.strip() and not message.attachments:
        return None
    shared = message.is_group and settings.memory_scope == "shared"
    content = transcript_text(message, shared=shared, quote=quote)
    user = {"role": "user", "content": content}
    return NewMessage.from_openai(
        user,
        counter.count_message(user),
        author_id=message.author_id,
        author_name=message.author_name,
        author_admin=author_admin,
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
    author_admin: bool | None = None,
) -> Delivery:
    """Settings and session step: what to store, in which session, and whether to answer."""
    command = parse_command(message.text)
    row = None
    if command is None:
        row = stored_row(message, settings, counter, quote, author_admin)
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


class ChatOrder:
    """Per-chat mutual exclusion for the ingress, so concurrent callers cannot interleave one
    chat's updates between a command's commit and its effect. Idle chats hold no lock object."""

    def __init__(self) -> None:
        # Per chat in use: its lock and how many callers hold or wait for it.
        self._chats: dict[str, _ChatLock] = {}

    @property
    def chats_in_use(self) -> int:
        return len(self._chats)

    def holding(self, chat_keys: Iterable[str]) -> _Holding:
        # Sorted, so two batches that share chats always take their locks in the same order.
        return _Holding(self._chats, sorted(set(chat_keys)))


@dataclass(slots=True)
class _ChatLock:
    lock: asyncio.Lock
    users: int = 0


class _Holding:
    """`async with`: every key's lock, taken in order; a class, not a generator, since it is
    entered once per inbound update."""

    __slots__ = ("_chats", "_held", "_keys")

    def __init__(self, chats: dict[str, _ChatLock], keys: list[str]) -> None:
        self._chats = chats
        self._keys = keys
        self._held: list[_ChatLock] = []

    async def __aenter__(self) -> None:
        chats = self._chats
        wanted = []
        for key in self._keys:
            chat = chats.get(key)
            if chat is None:
                chat = chats[key] = _ChatLock(asyncio.Lock())
            chat.users += 1
            wanted.append(chat)
        try:
            for chat in wanted:
                await chat.lock.acquire()
                self._held.append(chat)
        except BaseException:
            self._release()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        self._release()

    def _release(self) -> None:
        for chat in self._held:
            chat.lock.release()
        for key in self._keys:
            chat = self._chats[key]
            chat.users -= 1
            if not chat.users:
                del self._chats[key]

"""The ordered ingress as a forward chain, like aiogram 3's middlewares: each step receives
the update and the next step, and either passes the update on or ends its journey there.

`Gateway` links them in this order: allow-list (pure, before anything is written: a chat the
operator has not allowed leaves no trace), settings and session, dedup + chat upsert + store in
one transaction, then the admin status of an author who states a rule; what follows (commands,
files, answers) is the gateway's.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from compactbot.bot.commands.router import Command, ignored_command, parse_command
from compactbot.bot.events import Adapter, InboundMessage
from compactbot.bot.ingress.activation import activated
from compactbot.bot.ingress.inbound_text import reply_quote, transcript_text
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.base import IngestItem, NewMessage, SessionRecord
from compactbot.bot.store.protocols.revision_store import RevisionStore
from compactbot.bot.store.write_batcher import BatchedIngest
from compactbot.bot.turns.lanes import lane_key
from compactbot.compression.tokens import TokenCounter

log = logging.getLogger(__name__)

T = TypeVar("T")
Next = Callable[[T], Awaitable[None]]

ALLOW_EVERY_CHAT = "*"


@dataclass(frozen=True, slots=True)
class Arrival:
    """An update as it reaches the ingress, its text unable to forge a summary."""

    message: InboundMessage
    adapter: Adapter


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


@dataclass(frozen=True, slots=True)
class Stored:
    """A delivery after its transaction committed: its session and row (None: nothing stored)."""

    delivery: Delivery
    session: SessionRecord
    message_id: int | None
    states_rule: bool = False  # the stored analysis reads a chat rule in the message

    @property
    def lane(self) -> str:
        return lane_key(self.session.chat_key, self.session.scope_user)


def allowed(chat_key: str, allowed_chats: Sequence[str]) -> bool:
    """The allow-list: a chat, or any thread under it; the local console is always allowed."""
    if ALLOW_EVERY_CHAT in allowed_chats or chat_key.startswith("console:"):
        return True
    return any(chat_key == item or chat_key.startswith(item + ":") for item in allowed_chats)


def scope_user(message: InboundMessage, settings: ChatSettings) -> str | None:
    """Whose session a message belongs to: the member's own when memory_scope is per_user."""
    if message.is_group and settings.memory_scope == "per_user":
        return message.author_id
    return None


def admin_in_update(message: InboundMessage) -> bool | None:
    """Whether the author is a chat admin as the update says (in a private chat: yes); None:
    the platform did not say."""
    return True if not message.is_group else message.is_admin


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


class KnownChats:
    """Chats whose row already says what an update says of them, so it is not rewritten."""

    MAX = 100_000

    def __init__(self) -> None:
        self._chats: set[tuple[str, str | None, str | None, bool]] = set()

    def knows(self, message: InboundMessage) -> bool:
        return _chat_of(message) in self._chats

    def add(self, message: InboundMessage) -> None:
        if len(self._chats) >= self.MAX:
            self._chats.clear()
        self._chats.add(_chat_of(message))


def _chat_of(message: InboundMessage) -> tuple[str, str | None, str | None, bool]:
    return (message.chat_key, message.chat_title, message.parent_chat_key, message.is_group)


def allow_list(
    allowed_chats: Sequence[str], refuse: Next[Arrival], next_step: Next[Arrival]
) -> Next[Arrival]:
    """A chat the operator allowed goes on; any other is refused before any write."""

    async def step(arrival: Arrival) -> None:
        if allowed(arrival.message.chat_key, allowed_chats):
            await next_step(arrival)
        else:
            await refuse(arrival)

    return step


def settle(
    services: Services,
    known: KnownChats,
    queued_with: Callable[[Delivery], Delivery],
    next_step: Next[Delivery],
) -> Next[Arrival]:
    """Settings and session: what to store, where, and whether it will be answered;
    `queued_with` lets a durable turn queue add the message's turn to the same transaction."""

    async def step(arrival: Arrival) -> None:
        message = arrival.message
        settings = await services.settings_for(message.chat_key, message.parent_chat_key)
        # A reply brings the message it answers, found in the archive if compacted long ago.
        quote = await reply_quote(services.revisions, message)
        delivery = deliver(
            message,
            arrival.adapter,
            settings,
            services.counter,
            known_chat=known.knows(message),
            quote=quote,
            author_admin=admin_in_update(message),
        )
        await next_step(queued_with(delivery))

    return step


def store(
    ingests: BatchedIngest, known: KnownChats, metrics: Metrics, next_step: Next[Stored]
) -> Next[Delivery]:
    """Dedup and store: one transaction (shared with other chats' updates arriving
    together); a duplicate update ends here."""

    async def step(delivery: Delivery) -> None:
        [result] = await ingests.ingest([delivery.item])
        message = delivery.message
        if result.duplicate:
            log.info("duplicate update ignored (chat=%s)", message.chat_key)
            return
        assert result.session is not None  # set for every item that is not a duplicate
        known.add(message)
        metrics.message_received(message.platform, message.chat_key)
        await next_step(Stored(delivery, result.session, result.message_id, result.states_rule))

    return step


def rule_authors(
    revisions: RevisionStore,
    is_admin: Callable[[InboundMessage, Adapter], Awaitable[bool]],
    next_step: Next[Stored],
) -> Next[Stored]:
    """Only admins set rules (SPEC 16). When the update did not say whether the author
    is one, the platform is asked (cached) about a message whose stored analysis reads a rule
    in it, and only then: the analysis is made once, by the store, and rules are rare."""

    async def step(stored: Stored) -> None:
        row, message_id = stored.delivery.item.message, stored.message_id
        if stored.states_rule and row is not None and row.author_admin is None:
            assert message_id is not None
            message = stored.delivery.message
            if await is_admin(message, stored.delivery.adapter):
                await revisions.set_author_admin(message_id, True)
        await next_step(stored)

    return step

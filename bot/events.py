"""What adapters hand the gateway and what the gateway hands back: platform-neutral values."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable


def chat_key(platform: str, chat_id: str, thread_id: str | None = None) -> str:
    """`platform:chat_id[:thread_id]`: a forum topic or thread is a chat of its own."""
    return f"{platform}:{chat_id}:{thread_id}" if thread_id else f"{platform}:{chat_id}"


def target_for(key: str) -> ReplyTarget:
    """Where to post in a chat known only by its key (notices from background jobs)."""
    platform, _, rest = key.partition(":")
    # Telegram chat ids are negative numbers, so only the last ':' can separate a thread.
    chat_id, _, thread_id = rest.rpartition(":") if rest.count(":") else (rest, "", "")
    return ReplyTarget(platform, chat_id, thread_id or None)


@dataclass(frozen=True, slots=True)
class Attachment:
    """A photo or document that came with a message; `ref` is the platform's handle to fetch it."""

    kind: Literal["image", "document"]
    ref: str
    name: str | None = None
    mime_type: str | None = None
    size_bytes: int | None = None


@dataclass(frozen=True, slots=True)
class InboundMessage:
    """One message from a platform, already normalized by its adapter."""

    platform: str
    chat_id: str
    author_id: str
    author_name: str
    text: str
    # The adapter saw the bot mentioned, replied to, or commanded. The chat's activation setting
    # (always / keyword) is applied by the gateway, the same way for every platform.
    addressed: bool
    is_group: bool = True
    thread_id: str | None = None
    platform_message_id: str | None = None
    update_id: str | None = None
    reply_to: str | None = None
    # The replied-to message as the platform delivered it, for when the store never saw it.
    reply_to_text: str | None = None
    reply_to_author: str | None = None
    chat_title: str | None = None
    # Set by adapters that already know (console --admin); None means "ask the adapter".
    is_admin: bool | None = None
    # The message @mentions someone other than the bot: activation never treats it as a request.
    mentions_others: bool = False
    attachments: tuple[Attachment, ...] = ()
    language_code: str | None = None  # the author's platform language (Telegram, Discord locale)
    # The adapter shows the reply to the author alone (a Discord slash command's ephemeral answer).
    private_reply: bool = False

    @property
    def chat_key(self) -> str:
        return chat_key(self.platform, self.chat_id, self.thread_id)

    @property
    def parent_chat_key(self) -> str | None:
        return chat_key(self.platform, self.chat_id) if self.thread_id else None


@dataclass(frozen=True, slots=True)
class ReplyTarget:
    """Where a reply goes: the chat (and topic / thread) and the message it answers."""

    platform: str
    chat_id: str
    thread_id: str | None = None
    reply_to_message_id: str | None = None

    @classmethod
    def for_message(cls, message: InboundMessage) -> ReplyTarget:
        return cls(
            message.platform, message.chat_id, message.thread_id, message.platform_message_id
        )

    @property
    def chat_key(self) -> str:
        return chat_key(self.platform, self.chat_id, self.thread_id)


class StartupError(Exception):
    """A platform could not start (bad token, unreachable API): one line for the operator."""


class DeliveryError(Exception):
    """The platform refused or could not take a reply after the adapter's own retries."""


class Adapter(Protocol):
    """A platform connection. The gateway calls these; each adapter implements them."""

    platform: str

    async def send(self, target: ReplyTarget, text: str) -> None:
        """Deliver `text` (Markdown or a plain notice), split and retried as needed."""
        ...

    async def is_admin(self, message: InboundMessage) -> bool:
        """Whether the author may run admin commands in this chat."""
        ...

    def typing(self, target: ReplyTarget) -> contextlib.AbstractAsyncContextManager[None]:
        """Show a typing indicator for as long as the context is open."""
        ...


@runtime_checkable
class IdempotentSender(Protocol):
    """An adapter whose platform drops a repeated send with the same nonce (Discord's
    enforce_nonce), so a send whose outcome is unknown may safely be made again."""

    async def send_once(self, target: ReplyTarget, text: str, nonce: str) -> None:
        """`send`, each part carrying a nonce derived from `nonce` (at most 20 characters)."""
        ...

"""Purging from the console (SPEC 16): what a purge form names, and erasing it, audited.

Erasing is the store's `ForgetStore` operation that `/purge` and `compactbot purge` call, so the
console forgets exactly what they forget; this module only finds the target and records who did it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from compactbot.bot.operators.console.deps import ConsoleDeps
from compactbot.bot.operators.console.sessions import Viewer
from compactbot.bot.operators.console.views.chat import chat_or_404
from compactbot.bot.services import Services
from compactbot.bot.store.base import ChatRecord, SearchHit, StoredMessage
from compactbot.bot.store.protocols.transcript_store import TranscriptReads

log = logging.getLogger(__name__)

PURGE_ACTION = "purge"  # the audit log's name for it
# Platform user ids are numbers (Telegram, Discord) or short names (the console room).
MAX_MEMBER_ID_CHARS = 64
# A message stored without a platform id is named by its row: "row 42".
ROW_PREFIX = "row "
# Row ids in a form: longer numbers would not fit the stores' 64-bit integers.
MAX_ID_DIGITS = 18


class PurgeRefused(ValueError):
    """A purge form that names nothing purgeable; str() is what the page says."""


class MessageNotFound(LookupError):
    """The form names a message this chat does not have."""


@dataclass(frozen=True, slots=True)
class PurgeTarget:
    """One message (with every stored copy of it) or everything one member wrote in the chat."""

    chat: ChatRecord
    what: Literal["message", "member"]
    subject: str  # the message's platform id, or the member's platform user id
    message: StoredMessage | None  # the row the form was on (what: message; member: its name)
    count: int  # messages that go: 1, or the member's stored messages

    @property
    def member_name(self) -> str | None:
        return self.message.author_name if self.message is not None else None


async def purge_target(deps: ConsoleDeps, chat_key: str, form: Mapping[str, str]) -> PurgeTarget:
    """What `form` asks to erase in this chat (only ever this chat's rows). Raises PurgeRefused
    or MessageNotFound, and reads nothing of another chat then."""
    chat = await chat_or_404(deps, chat_key)
    what = form.get("what", "")
    message = None
    if form.get("message"):
        message = await _chat_message(deps.services, chat, form.get("session"), form.get("message"))
    if what == "message":
        if message is None or not _written(message):
            raise PurgeRefused("Only a message someone wrote can be purged on its own.")
        subject = message.platform_message_id or f"{ROW_PREFIX}{message.id}"
        return PurgeTarget(chat, "message", subject, message, 1)
    if what != "member":
        raise PurgeRefused("Choose a message or a member to purge.")
    member = (message.author_id if message is not None else form.get("member", "").strip()) or ""
    if len(member.split()) != 1 or len(member) > MAX_MEMBER_ID_CHARS or not member.isprintable():
        raise PurgeRefused("A member id is one word, as /purge takes it.")
    count = await deps.services.forgetting.count_member_messages(chat.key, member)
    return PurgeTarget(chat, "member", member, message, count)


async def purge(deps: ConsoleDeps, viewer: Viewer, target: PurgeTarget) -> int:
    """Erase `target` through the store's forgetting and audit it; the stored rows erased."""
    store, chat_key = deps.services.forgetting, target.chat.key
    if target.what == "message" and target.subject.startswith(ROW_PREFIX):
        # Stored without a platform id (the bot's reply): by its row, with the row's copies.
        count = await store.forget_rows(chat_key, [int(target.subject[len(ROW_PREFIX) :])])
    elif target.what == "message":
        count = await store.forget_messages(chat_key, [target.subject])
    else:
        count = await store.forget_member(chat_key, target.subject)
    # Ids and counts only: the audit log must not keep the text it reports erasing.
    detail = f"{target.what} {target.subject}: {count} stored rows"
    await deps.audit(viewer, PURGE_ACTION, detail, chat_key)
    log.info("console: %s purged a %s in %s: %d rows", viewer.who, target.what, chat_key, count)
    return count


async def rows_of_hits(
    store: TranscriptReads, hits: Sequence[SearchHit]
) -> dict[int, StoredMessage]:
    """The stored rows behind search hits, by id: their author and platform id name a purge."""
    wanted: dict[int, list[int]] = {}
    for hit in hits:
        wanted.setdefault(hit.session_id, []).append(hit.message_id)
    rows: dict[int, StoredMessage] = {}
    for session_id, ids in wanted.items():
        rows.update((m.id, m) for m in await store.load_messages(session_id, ids))
    return rows


async def _chat_message(
    services: Services, chat: ChatRecord, session_raw: str | None, message_raw: str | None
) -> StoredMessage:
    """The row `message_raw` of session `session_raw`, which must be one of this chat's."""
    session_id, message_id = _as_id(session_raw), _as_id(message_raw)
    if session_id is None or message_id is None:
        raise MessageNotFound(message_raw)
    if session_id not in {s.id for s in await services.sessions.list_sessions(chat.key)}:
        raise MessageNotFound(message_raw)
    found = await services.transcript.load_messages(session_id, [message_id])
    if not found:
        raise MessageNotFound(message_raw)
    return found[0]


def _written(message: StoredMessage) -> bool:
    """A member's message or the bot's reply: not a summary, a tool result or a call stub,
    whose loss would leave the transcript's tool rounds incomplete."""
    if message.platform_message_id:
        return True
    return (
        message.kind == "message"
        and message.role in ("user", "assistant")
        and not (message.tool_calls)
    )


def _as_id(text: str | None) -> int | None:
    """A row id from a form, or None when it is not one."""
    if text is None or not text.isascii() or not text.isdigit() or len(text) > MAX_ID_DIGITS:
        return None
    return int(text)

"""The storage seam's records and errors (SPEC 4); each protocol has a module of its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from compactbot.bot.store.message_records import MessageKind as MessageKind
from compactbot.bot.store.message_records import NewMessage as NewMessage
from compactbot.bot.store.message_records import StoredMessage as StoredMessage
from compactbot.bot.store.message_records import openai_form as openai_form
from compactbot.compression.state import CompressorState

UsagePurpose = Literal["reply", "compression"]


class StoreError(Exception):
    """Root of storage failures."""


class TurnLost(StoreError):
    """The durable turn was taken over by another worker; the write changed nothing."""


class SessionNotFound(StoreError):
    pass


@dataclass(frozen=True, slots=True)
class ChatRecord:
    key: str  # "platform:chat_id[:thread_id]"
    platform: str
    title: str | None = None
    parent_key: str | None = None  # a thread's parent chat, whose settings it inherits
    is_group: bool = True
    created_at: float = 0.0


@dataclass(frozen=True, slots=True)
class SessionRecord:
    id: int
    chat_key: str
    scope_user: str | None  # set when the chat's memory_scope is per_user
    started_at: float
    ended_at: float | None
    active_tokens: int
    active_messages: int
    # Bumped by every compaction and every in-place change of a live row (edits, deletes).
    version: int
    last_activity_at: float
    system_prompt: str | None
    compressor: CompressorState = field(default_factory=CompressorState)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    id: int
    platform: str
    update_id: str
    received_at: float
    error: str
    payload: str  # the raw update as received, truncated to MAX_PAYLOAD_CHARS


@dataclass(frozen=True, slots=True)
class TurnFence:
    """Who owns a claimed durable turn (SPEC 15): a write carrying a stale one changes nothing."""

    job_id: int
    holder: str
    attempts: int


@dataclass(frozen=True, slots=True)
class CompactionCommit:
    archived: int
    inserted: int
    active_tokens: int
    active_messages: int
    version: int
    # Ids of the inserted compacted rows, in transcript order.
    inserted_ids: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class SearchHit:
    message_id: int
    session_id: int
    role: str
    author_name: str | None
    text: str
    created_at: float
    active: bool


@dataclass(frozen=True, slots=True)
class CompressionEvent:
    chat_key: str
    session_id: int
    trigger: str  # hygiene | preflight | pressure | post_response | overflow | overnight | manual
    started_at: float
    ended_at: float
    outcome: str  # compressed | fallback | aborted | noop | skipped | error
    messages_before: int = 0
    messages_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary_tokens: int = 0
    error: str | None = None
    id: int | None = None
    summary_calls: int = 0  # model calls the compaction made
    summary_cost_tokens: int = 0  # prompt + completion tokens those calls spent


@dataclass(frozen=True, slots=True)
class Pin:
    id: int
    chat_key: str
    text: str
    author: str | None
    created_at: float


@dataclass(frozen=True, slots=True)
class UsageRow:
    chat_key: str
    user_id: str | None
    day: str  # ISO date, UTC
    purpose: UsagePurpose
    prompt_tokens: int
    completion_tokens: int
    calls: int


@dataclass(frozen=True, slots=True)
class InboxEntry:
    """A durable turn to enqueue with its message (PostgreSQL workers; SPEC 15)."""

    lane: str
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class IngestItem:
    """One inbound update for `ingest`: its dedup key, its chat, and the row to store (if any)."""

    platform: str
    update_id: str | None  # None: no dedup (the platform gives no stable id)
    chat_key: str
    scope_user: str | None
    # None for a command: only marked processed, it runs after the commit.
    message: NewMessage | None
    title: str | None = None
    parent_key: str | None = None
    is_group: bool = True
    # False when the caller knows the chat row already says this (saves a write per message).
    upsert_chat: bool = True
    # Committed with the message, so a stored question is never left without its turn.
    enqueue: InboxEntry | None = None


@dataclass(frozen=True, slots=True)
class IngestResult:
    duplicate: bool
    # The session the message went to, after the insert (None for a duplicate).
    session: SessionRecord | None = None
    message_id: int | None = None
    # The stored analysis read a chat rule in the message (its author's status then matters).
    states_rule: bool = False


@dataclass(frozen=True, slots=True)
class LockRecord:
    session_id: int
    holder: str
    expires_at: float


# A pure change of the compressor state, applied to the freshest row inside one transaction.
StateDelta = Callable[[CompressorState], CompressorState]

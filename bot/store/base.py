"""The storage seam: records that cross it and the small protocols a backend implements (SPEC 4)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from compactbot.bot.store.forget_store import ForgetStore
from compactbot.bot.store.message_records import MessageKind as MessageKind
from compactbot.bot.store.message_records import NewMessage as NewMessage
from compactbot.bot.store.message_records import StoredMessage as StoredMessage
from compactbot.bot.store.message_records import openai_form as openai_form
from compactbot.bot.store.shared_limits import SharedLimits
from compactbot.compression.memory import Memory
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


@dataclass(frozen=True, slots=True)
class LockRecord:
    session_id: int
    holder: str
    expires_at: float


# A pure change of the compressor state, applied to the freshest row inside one transaction.
StateDelta = Callable[[CompressorState], CompressorState]


class TranscriptStore(Protocol):
    """Chats, sessions and their messages: ingest, the fenced compaction commit, search."""

    async def upsert_chat(
        self,
        key: str,
        platform: str,
        *,
        title: str | None = None,
        parent_key: str | None = None,
        is_group: bool = True,
    ) -> ChatRecord: ...
    async def get_chat(self, key: str) -> ChatRecord | None: ...
    async def list_chats(self) -> list[ChatRecord]: ...
    async def migrate_chat(self, old_key: str, new_key: str) -> None: ...
    async def active_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        """The chat's open session, created when there is none."""
        ...

    async def get_session(self, session_id: int) -> SessionRecord: ...
    async def new_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        """End the open session (if any) and start another."""
        ...

    async def list_sessions(self, chat_key: str | None = None) -> list[SessionRecord]: ...
    async def save_compressor_state(self, session_id: int, state: CompressorState) -> None:
        """Overwrite the state (operator tools and tests only; the service writes deltas)."""
        ...

    async def apply_state_delta(
        self,
        session_id: int,
        expected_version: int,
        delta: StateDelta,
        *,
        fence: TurnFence | None = None,
    ) -> CompressorState | None:
        """Apply `delta` to the stored state if the session is still at `expected_version`.

        Returns the new state, or None (nothing written) when a compaction committed since.
        A `fence` (durable turns, PostgreSQL only) raises TurnLost once it is stale.
        """
        ...

    async def set_system_prompt(self, session_id: int, prompt: str | None) -> None: ...

    async def ingest(self, items: Sequence[IngestItem]) -> list[IngestResult]:
        """Dedup, chat upsert and message insert of every item in ONE transaction, in order.

        An item whose update id was seen before is a duplicate and writes nothing.
        """
        ...

    async def append_messages(
        self,
        session_id: int,
        messages: Sequence[NewMessage],
        *,
        fence: TurnFence | None = None,
    ) -> list[int]:
        """Insert in order and update the session's running totals in the same transaction."""
        ...

    async def append_batch(
        self, items: Sequence[tuple[int, Sequence[NewMessage]]]
    ) -> list[list[int]]:
        """`append_messages` for several sessions in one transaction (all or nothing)."""
        ...

    async def load_active(self, session_id: int) -> list[StoredMessage]: ...
    async def load_appended(
        self, session_id: int, after_id: int, version: int
    ) -> list[StoredMessage] | None:
        """Active rows with id > `after_id` in transcript order, or None if the session's
        version is no longer `version` (read in one statement, so the two agree)."""
        ...

    async def load_history(
        self, chat_key: str, *, include_archived: bool = True
    ) -> list[StoredMessage]: ...
    async def archive_and_compact(
        self,
        session: SessionRecord,
        compacted: Sequence[NewMessage],
        watermark: int | None,
        *,
        state: StateDelta | None = None,
        system_prompt: str | None = None,
        event: CompressionEvent | None = None,
        holder: str | None = None,
        memory: Memory | None = None,
        span_ids: Sequence[int] | None = None,
    ) -> CompactionCommit | None:
        """The whole compaction commit, in one transaction; `memory` (SPEC 6.11), when given,
        replaces the session's memory in that same transaction.

        Archives the active rows up to and including the row `watermark` (in transcript order;
        None archives nothing) and inserts `compacted` in their place, before the rows that came
        after it; applies the `state` delta to the current state; writes `system_prompt` and
        `event`; releases `holder`'s lock.
        Compare-and-set on `session.version` (and on `holder` still owning the lock): returns
        None and changes nothing if another commit won. `span_ids`, the live rows the compaction
        read: while every one of them is still live, a version change (an edit, late content)
        does not fence the commit out; the edit is applied after it, as to any archived row, and
        each verbatim copy (`NewMessage.copy_of`) takes its original's text as of the commit.
        """
        ...

    async def load_memory(self, session_id: int) -> Memory:
        """The session's memory as the last committed compaction left it (empty before one)."""
        ...

    async def load_messages(self, session_id: int, ids: Sequence[int]) -> list[StoredMessage]:
        """The session's rows with these ids, archived ones included, in transcript order."""
        ...

    async def count_archived(self, chat_key: str) -> int:
        """Rows of the chat that are no longer live (archived by compaction), all sessions."""
        ...

    async def search(self, chat_key: str, query: str, limit: int = 10) -> list[SearchHit]: ...
    async def recount(self, session_id: int) -> tuple[int, int]:
        """(tokens, messages) of the active rows, recomputed from scratch."""
        ...


class MemoryStore(Protocol):
    """Durable per-chat facts (pins, SPEC 6.8)."""

    async def add_pin(self, chat_key: str, text: str, author: str | None) -> Pin: ...
    async def list_pins(self, chat_key: str) -> list[Pin]: ...
    async def remove_pin(self, chat_key: str, pin_id: int) -> bool: ...


class SettingsStore(Protocol):
    """Per-chat settings as raw strings; validation lives in bot.chat_settings."""

    async def get_chat_settings(self, chat_key: str) -> dict[str, str]: ...
    async def set_chat_setting(self, chat_key: str, key: str, value: str) -> None: ...
    async def unset_chat_setting(self, chat_key: str, key: str) -> bool: ...


class BookkeepingStore(Protocol):
    """Compaction locks (leases), redelivery dedup, compression events, usage."""

    async def acquire_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool: ...
    async def renew_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool: ...
    async def release_lock(self, session_id: int, holder: str) -> bool: ...
    async def lock_holder(self, session_id: int) -> str | None: ...
    async def list_locks(self) -> list[LockRecord]:
        """Every lock row, expired or not (start-up reclaims the dead holders' rows)."""
        ...

    async def mark_update_processed(self, platform: str, update_id: str) -> bool:
        """True the first time an update id is seen, False for a redelivery."""
        ...

    async def record_compression_event(self, event: CompressionEvent) -> int: ...
    async def list_compression_events(
        self, *, chat_key: str | None = None, limit: int = 50
    ) -> list[CompressionEvent]: ...
    async def add_usage(
        self,
        chat_key: str,
        user_id: str | None,
        purpose: UsagePurpose,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        day: str | None = None,
    ) -> None: ...
    async def usage(self, chat_key: str, since_day: str) -> list[UsageRow]: ...

    async def record_dead_letter(
        self, platform: str, update_id: str, error: str, payload: str
    ) -> bool:
        """Keep an update that could not be ingested; True the first time it is recorded."""
        ...

    async def list_dead_letters(self, limit: int = 50) -> list[DeadLetter]: ...

    # messages by platform id: reply context, edits, deletes (bot/store/revisions.py)
    async def find_platform_message(
        self, chat_key: str, platform_message_id: str
    ) -> StoredMessage | None: ...
    async def edit_platform_message(
        self,
        chat_key: str,
        platform_message_id: str,
        content: str,
        tokens: int,
        hints: int | None = None,
    ) -> bool: ...
    async def delete_platform_message(self, chat_key: str, platform_message_id: str) -> bool: ...
    async def message_revisions(self, message_id: int) -> list[str]: ...
    async def set_message_content(
        self, message_id: int, content: Any, tokens: int, hints: int | None = None
    ) -> None: ...


class Store(
    TranscriptStore,
    MemoryStore,
    SettingsStore,
    BookkeepingStore,
    ForgetStore,
    SharedLimits,
    Protocol,
):
    """Everything the service persists, as one backend implements it; one writer at a time."""

    async def open(self) -> None: ...
    async def close(self) -> None: ...
    def observe_commits(self, callback: Callable[[float], None]) -> None:
        """`callback(seconds)` after every committed write transaction (the metrics hook)."""
        ...

"""Persistence: the storage protocols, their records, and the SQLite and PostgreSQL backends."""

from __future__ import annotations

from compactbot.bot.store.backends import (
    StoreTarget,
    UnsupportedStore,
    create_store,
    open_store,
    parse_store_url,
)
from compactbot.bot.store.base import (
    ChatRecord,
    CompactionCommit,
    CompressionEvent,
    IngestItem,
    IngestResult,
    LockRecord,
    MessageKind,
    NewMessage,
    Pin,
    SearchHit,
    SessionNotFound,
    SessionRecord,
    StateDelta,
    StoredMessage,
    StoreError,
    UsagePurpose,
    UsageRow,
)
from compactbot.bot.store.chat_store import ChatStore
from compactbot.bot.store.dead_letters import DeadLetterStore
from compactbot.bot.store.dedup_store import DedupStore
from compactbot.bot.store.event_store import CompressionEventStore
from compactbot.bot.store.forget_store import ForgetStore
from compactbot.bot.store.lock_store import LockStore
from compactbot.bot.store.pin_store import PinStore
from compactbot.bot.store.postgres.store import PostgresStore
from compactbot.bot.store.revision_store import RevisionStore
from compactbot.bot.store.session_store import SessionStore
from compactbot.bot.store.settings_store import SettingsStore
from compactbot.bot.store.shared_limits import SharedLimits
from compactbot.bot.store.sqlite.store import SqliteStore
from compactbot.bot.store.transcript_store import TranscriptReads, TranscriptWrites
from compactbot.bot.store.usage_store import UsageStore

__all__ = [
    "ChatRecord",
    "ChatStore",
    "CompactionCommit",
    "CompressionEvent",
    "CompressionEventStore",
    "DeadLetterStore",
    "DedupStore",
    "ForgetStore",
    "IngestItem",
    "IngestResult",
    "LockRecord",
    "LockStore",
    "MessageKind",
    "NewMessage",
    "Pin",
    "PinStore",
    "PostgresStore",
    "RevisionStore",
    "SearchHit",
    "SessionNotFound",
    "SessionRecord",
    "SessionStore",
    "SettingsStore",
    "SharedLimits",
    "SqliteStore",
    "StateDelta",
    "StoreError",
    "StoreTarget",
    "StoredMessage",
    "TranscriptReads",
    "TranscriptWrites",
    "UnsupportedStore",
    "UsagePurpose",
    "UsageRow",
    "UsageStore",
    "create_store",
    "open_store",
    "parse_store_url",
]

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
from compactbot.bot.store.postgres.store import PostgresStore
from compactbot.bot.store.protocols.chat_store import ChatStore
from compactbot.bot.store.protocols.dead_letters import DeadLetterStore
from compactbot.bot.store.protocols.dedup_store import DedupStore
from compactbot.bot.store.protocols.event_store import CompressionEventStore
from compactbot.bot.store.protocols.forget_store import ForgetStore
from compactbot.bot.store.protocols.lock_store import LockStore
from compactbot.bot.store.protocols.pin_store import PinStore
from compactbot.bot.store.protocols.revision_store import RevisionStore
from compactbot.bot.store.protocols.session_store import SessionStore
from compactbot.bot.store.protocols.settings_store import SettingsStore
from compactbot.bot.store.protocols.shared_limits import SharedLimits
from compactbot.bot.store.protocols.transcript_store import TranscriptReads, TranscriptWrites
from compactbot.bot.store.protocols.usage_store import UsageStore
from compactbot.bot.store.sqlite.store import SqliteStore

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

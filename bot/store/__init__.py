"""Persistence: the `Store` protocol, its records, and the SQLite and PostgreSQL backends."""

from __future__ import annotations

from compactbot.bot.store.backends import (
    StoreTarget,
    UnsupportedStore,
    create_store,
    open_store,
    parse_store_url,
)
from compactbot.bot.store.base import (
    BookkeepingStore,
    ChatRecord,
    CompactionCommit,
    CompressionEvent,
    IngestItem,
    IngestResult,
    LockRecord,
    MemoryStore,
    MessageKind,
    NewMessage,
    Pin,
    SearchHit,
    SessionNotFound,
    SessionRecord,
    SettingsStore,
    StateDelta,
    Store,
    StoredMessage,
    StoreError,
    TranscriptStore,
    UsagePurpose,
    UsageRow,
)
from compactbot.bot.store.postgres import PostgresStore
from compactbot.bot.store.sqlite import SqliteStore

__all__ = [
    "BookkeepingStore",
    "ChatRecord",
    "CompactionCommit",
    "CompressionEvent",
    "IngestItem",
    "IngestResult",
    "LockRecord",
    "MemoryStore",
    "MessageKind",
    "NewMessage",
    "Pin",
    "PostgresStore",
    "SearchHit",
    "SessionNotFound",
    "SessionRecord",
    "SettingsStore",
    "SqliteStore",
    "StateDelta",
    "Store",
    "StoreError",
    "StoreTarget",
    "StoredMessage",
    "TranscriptStore",
    "UnsupportedStore",
    "UsagePurpose",
    "UsageRow",
    "create_store",
    "open_store",
    "parse_store_url",
]

"""Persistence: the `Store` protocol, its records, and the SQLite and PostgreSQL backends."""

from __future__ import annotations

from bot.store.backends import (
    StoreTarget,
    UnsupportedStore,
    create_store,
    open_store,
    parse_store_url,
)
from bot.store.base import (
    ChatRecord,
    CompactionCommit,
    CompressionEvent,
    MessageKind,
    NewMessage,
    Pin,
    SearchHit,
    SessionNotFound,
    SessionRecord,
    Store,
    StoredMessage,
    StoreError,
    UsagePurpose,
    UsageRow,
)
from bot.store.postgres import PostgresStore
from bot.store.sqlite import SqliteStore

__all__ = [
    "ChatRecord",
    "CompactionCommit",
    "CompressionEvent",
    "MessageKind",
    "NewMessage",
    "Pin",
    "PostgresStore",
    "SearchHit",
    "SessionNotFound",
    "SessionRecord",
    "SqliteStore",
    "Store",
    "StoreError",
    "StoreTarget",
    "StoredMessage",
    "UnsupportedStore",
    "UsagePurpose",
    "UsageRow",
    "create_store",
    "open_store",
    "parse_store_url",
]

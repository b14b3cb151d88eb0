"""Persistence: the `Store` protocol, its records, and the SQLite implementation."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from bot.store.base import (
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
from bot.store.sqlite import SqliteStore

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
    "SearchHit",
    "SessionNotFound",
    "SessionRecord",
    "SettingsStore",
    "SqliteStore",
    "StateDelta",
    "Store",
    "StoreError",
    "StoredMessage",
    "TranscriptStore",
    "UsagePurpose",
    "UsageRow",
    "open_store",
]

_SQLITE_SCHEMES = ("sqlite:///", "sqlite://", "sqlite:")


async def open_store(url_or_path: str | Path, *, clock: Callable[[], float] = time.time) -> Store:
    """An opened store for a path, ":memory:" or "sqlite:///path"; other schemes are refused."""
    target = str(url_or_path)
    for scheme in _SQLITE_SCHEMES:
        if target.startswith(scheme):
            target = target[len(scheme) :]
            break
    else:
        if "://" in target:
            scheme = target.split("://", 1)[0]
            raise StoreError(f"unsupported store scheme {scheme!r}: only sqlite is built in")
    if not target:
        raise StoreError("empty store path")
    store = SqliteStore(target, clock=clock)
    await store.open()
    return store

"""Which backend a `COMPACTBOT_DB` value names and the store that opens it, typed `Store`: every
storage protocol at once, named only here and at the composition root."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from compactbot.bot.store.base import StoreError
from compactbot.bot.store.postgres.database import redacted_dsn
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

Backend = Literal["sqlite", "postgresql"]

_SQLITE_SCHEMES = ("sqlite:///", "sqlite://", "sqlite:")
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
EXPECTED = "a file path, sqlite:///path or postgresql://user@host/database"


class StoreLifecycle(Protocol):
    """Opening and closing a backend, and the metrics hook on its commits."""

    async def open(self) -> None: ...
    async def close(self) -> None: ...
    def observe_commits(self, callback: Callable[[float], None]) -> None:
        """`callback(seconds)` after every committed write transaction (the metrics hook)."""
        ...


class Store(
    ChatStore,
    SessionStore,
    TranscriptReads,
    TranscriptWrites,
    PinStore,
    SettingsStore,
    LockStore,
    DedupStore,
    CompressionEventStore,
    UsageStore,
    DeadLetterStore,
    RevisionStore,
    ForgetStore,
    SharedLimits,
    StoreLifecycle,
    Protocol,
):
    """Everything the service persists, as one backend implements it; one writer at a time.
    Consumers name the protocols they use instead (tests/structure/test_store_protocols.py)."""


class UnsupportedStore(StoreError):
    """The store URL has a scheme no backend serves, or names nothing."""


@dataclass(frozen=True, slots=True)
class StoreTarget:
    backend: Backend
    location: str  # the SQLite path, or the PostgreSQL DSN as given (it may hold a password)

    @property
    def shown(self) -> str:
        """The location safe to log or print: a DSN's password replaced by ***."""
        return redacted_dsn(self.location) if self.backend == "postgresql" else self.location


def parse_store_url(url_or_path: str | Path) -> StoreTarget:
    target = str(url_or_path)
    if target.startswith(_POSTGRES_SCHEMES):
        return StoreTarget("postgresql", target)
    for scheme in _SQLITE_SCHEMES:
        if target.startswith(scheme):
            target = target[len(scheme) :]
            break
    else:
        if "://" in target:
            scheme = target.split("://", 1)[0]
            raise UnsupportedStore(f"unsupported store scheme {scheme!r}: expected {EXPECTED}")
    if not target:
        raise UnsupportedStore("empty store path")
    return StoreTarget("sqlite", target)


def create_store(
    url_or_path: str | Path | StoreTarget, *, clock: Callable[[], float] = time.time
) -> Store:
    """The store a URL names, not yet opened."""
    target = url_or_path if isinstance(url_or_path, StoreTarget) else parse_store_url(url_or_path)
    if target.backend == "postgresql":
        return PostgresStore(target.location, clock=clock)
    return SqliteStore(target.location, clock=clock)


def create_read_only_store(url_or_path: str | Path) -> Store:
    """A store for reports, not yet opened: an SQLite file is opened read-only."""
    target = parse_store_url(url_or_path)
    if target.backend != "sqlite":
        # Reports issue only reads, so a PostgreSQL store needs no special mode.
        return create_store(target)
    path = target.location
    if path == ":memory:" or not Path(path).exists():
        # Nothing stored yet: report on an empty store rather than create the file.
        return SqliteStore(":memory:")
    return SqliteStore(path, read_only=True)


async def open_store(
    url_or_path: str | Path | StoreTarget, *, clock: Callable[[], float] = time.time
) -> Store:
    """An opened store for a path, ":memory:", "sqlite:///path" or "postgresql://…"."""
    store = create_store(url_or_path, clock=clock)
    await store.open()
    return store

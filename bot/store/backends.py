"""Which backend a `COMPACTBOT_DB` value names, and the store that opens it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from compactbot.bot.store.base import Store, StoreError
from compactbot.bot.store.postgres import PostgresStore
from compactbot.bot.store.postgres_database import redacted_dsn
from compactbot.bot.store.sqlite import SqliteStore

Backend = Literal["sqlite", "postgresql"]

_SQLITE_SCHEMES = ("sqlite:///", "sqlite://", "sqlite:")
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
EXPECTED = "a file path, sqlite:///path or postgresql://user@host/database"


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


async def open_store(
    url_or_path: str | Path | StoreTarget, *, clock: Callable[[], float] = time.time
) -> Store:
    """An opened store for a path, ":memory:", "sqlite:///path" or "postgresql://…"."""
    store = create_store(url_or_path, clock=clock)
    await store.open()
    return store

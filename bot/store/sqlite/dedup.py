"""The SQLite `DedupStore`: an update's id is marked in the transaction that stores it."""

from __future__ import annotations

from collections.abc import Callable

import aiosqlite

from compactbot.bot.store.protocols.dedup_store import (
    PROCESSED_UPDATES_KEEP_SECONDS,
    PRUNE_INTERVAL_SECONDS,
)
from compactbot.bot.store.sqlite.database import Database

MARK_PROCESSED_SQL = (
    "INSERT OR IGNORE INTO processed_updates(platform, update_id, seen_at) VALUES (?, ?, ?)"
)
PRUNE_PROCESSED_SQL = "DELETE FROM processed_updates WHERE seen_at < ?"


class SqliteDedup:
    """`DedupStore` of `SqliteStore`."""

    _db: Database
    _clock: Callable[[], float]
    _last_prune: float = 0.0

    async def mark_update_processed(self, platform: str, update_id: str) -> bool:
        now = self._clock()
        async with self._db.transaction() as conn:
            inserted = await mark_processed(conn, platform, update_id, now)
            self._last_prune = await prune_processed(conn, now, self._last_prune)
        return inserted


async def mark_processed(
    conn: aiosqlite.Connection, platform: str, update_id: str, now: float
) -> bool:
    cur = await conn.execute(MARK_PROCESSED_SQL, (platform, str(update_id), now))
    return cur.rowcount == 1


async def prune_processed(conn: aiosqlite.Connection, now: float, last_prune: float) -> float:
    """Drop dedup keys too old to be redelivered, at most hourly; the new last-prune time."""
    if now - last_prune < PRUNE_INTERVAL_SECONDS:
        return last_prune
    await conn.execute(PRUNE_PROCESSED_SQL, (now - PROCESSED_UPDATES_KEEP_SECONDS,))
    return now

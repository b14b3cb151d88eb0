"""The PostgreSQL `DedupStore`: an update's id is marked in the transaction that stores it."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from compactbot.bot.store.postgres.database import PostgresDatabase, affected
from compactbot.bot.store.protocols.dedup_store import (
    PROCESSED_UPDATES_KEEP_SECONDS,
    PRUNE_INTERVAL_SECONDS,
)

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection


class PostgresDedup:
    """`DedupStore` of `PostgresStore`."""

    _db: PostgresDatabase
    _clock: Callable[[], float]
    _last_prune: float = 0.0

    async def mark_update_processed(self, platform: str, update_id: str) -> bool:
        now = self._clock()
        async with self._db.transaction() as conn:
            inserted = await mark_processed(conn, platform, update_id, now)
            self._last_prune = await prune_processed(conn, now, self._last_prune)
        return inserted


async def mark_processed(conn: PooledConnection, platform: str, update_id: str, now: float) -> bool:
    """Mark an update processed inside the caller's transaction; False when it already was."""
    status = await conn.execute(
        "INSERT INTO processed_updates(platform, update_id, seen_at)"
        " VALUES ($1, $2, $3) ON CONFLICT(platform, update_id) DO NOTHING",
        platform,
        str(update_id),
        now,
    )
    return affected(status) == 1


async def prune_processed(conn: PooledConnection, now: float, last_prune: float) -> float:
    """Drop dedup keys too old to be redelivered, at most hourly; the new last-prune time."""
    if now - last_prune < PRUNE_INTERVAL_SECONDS:
        return last_prune
    await conn.execute(
        "DELETE FROM processed_updates WHERE seen_at < $1", now - PROCESSED_UPDATES_KEEP_SECONDS
    )
    return now

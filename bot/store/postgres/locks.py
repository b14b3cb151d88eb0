"""The PostgreSQL `LockStore`: compaction leases, one row per session."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from compactbot.bot.store.base import LockRecord
from compactbot.bot.store.postgres.database import PostgresDatabase, affected

if TYPE_CHECKING:
    pass


class PostgresLocks:
    """`LockStore` of `PostgresStore`."""

    _db: PostgresDatabase
    _clock: Callable[[], float]

    async def acquire_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool:
        now = self._clock()
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM compression_locks WHERE session_id = $1 AND expires_at <= $2",
                session_id,
                now,
            )
            # A racing insert of the same session waits for the other's commit, then does nothing.
            await conn.execute(
                "INSERT INTO compression_locks(session_id, holder, acquired_at, expires_at)"
                " VALUES ($1, $2, $3, $4) ON CONFLICT(session_id) DO NOTHING",
                session_id,
                holder,
                now,
                now + ttl_seconds,
            )
            current = await conn.fetchval(
                "SELECT holder FROM compression_locks WHERE session_id = $1", session_id
            )
        return bool(current == holder)

    async def renew_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool:
        now = self._clock()
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "UPDATE compression_locks SET expires_at = $1"
                " WHERE session_id = $2 AND holder = $3 AND expires_at > $4",
                now + ttl_seconds,
                session_id,
                holder,
                now,
            )
        return affected(status) == 1

    async def release_lock(self, session_id: int, holder: str) -> bool:
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "DELETE FROM compression_locks WHERE session_id = $1 AND holder = $2",
                session_id,
                holder,
            )
        return affected(status) == 1

    async def lock_holder(self, session_id: int) -> str | None:
        row = await self._db.fetchone(
            "SELECT holder FROM compression_locks WHERE session_id = $1 AND expires_at > $2",
            (session_id, self._clock()),
        )
        return row["holder"] if row else None

    async def list_locks(self) -> list[LockRecord]:
        found = await self._db.fetchall(
            "SELECT session_id, holder, expires_at FROM compression_locks ORDER BY session_id"
        )
        return [LockRecord(r["session_id"], r["holder"], r["expires_at"]) for r in found]

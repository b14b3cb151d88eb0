"""The SQLite `LockStore`: compaction leases, one row per session."""

from __future__ import annotations

from collections.abc import Callable

from compactbot.bot.store.base import LockRecord
from compactbot.bot.store.sqlite.database import Database, one


class SqliteLocks:
    """`LockStore` of `SqliteStore`."""

    _db: Database
    _clock: Callable[[], float]

    async def acquire_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool:
        now = self._clock()
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM compression_locks WHERE session_id = ? AND expires_at <= ?",
                (session_id, now),
            )
            await conn.execute(
                "INSERT OR IGNORE INTO compression_locks(session_id, holder, acquired_at,"
                " expires_at) VALUES (?, ?, ?, ?)",
                (session_id, holder, now, now + ttl_seconds),
            )
            row = await one(
                conn, "SELECT holder FROM compression_locks WHERE session_id = ?", (session_id,)
            )
        return row is not None and row["holder"] == holder

    async def renew_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool:
        now = self._clock()
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "UPDATE compression_locks SET expires_at = ?"
                " WHERE session_id = ? AND holder = ? AND expires_at > ?",
                (now + ttl_seconds, session_id, holder, now),
            )
        return cur.rowcount == 1

    async def release_lock(self, session_id: int, holder: str) -> bool:
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
                (session_id, holder),
            )
        return cur.rowcount == 1

    async def lock_holder(self, session_id: int) -> str | None:
        row = await self._db.fetchone(
            "SELECT holder FROM compression_locks WHERE session_id = ? AND expires_at > ?",
            (session_id, self._clock()),
        )
        return row["holder"] if row else None

    async def list_locks(self) -> list[LockRecord]:
        found = await self._db.fetchall(
            "SELECT session_id, holder, expires_at FROM compression_locks ORDER BY session_id"
        )
        return [LockRecord(r["session_id"], r["holder"], r["expires_at"]) for r in found]

"""The PostgreSQL `SharedLimits`: each check is ONE statement, so workers racing on a key queue.

`INSERT … ON CONFLICT DO UPDATE` locks the key's row and computes the new value from its latest
committed version, so of two workers checking at once the second sees the first's hit.
"""

from __future__ import annotations

from collections.abc import Callable

from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.protocols.shared_limits import (
    CHAT_SPEND_WHERE,
    LIMITS_PRUNE_INTERVAL_SECONDS,
    RATE_WINDOW_SECONDS,
    DaySpend,
)

# $1 key, $2 per_minute, $3 now, $4 the window's seconds.
_IN_WINDOW = "(SELECT count(*) FROM unnest(w.hits) AS h WHERE $3 - h < $4)"
_UNDER_LIMIT = f"{_IN_WINDOW} < $2"
_RATE_HIT_SQL = (
    "INSERT INTO rate_windows AS w (key, hits, allowed, last_at)"
    " VALUES ($1, ARRAY[$3::float8], TRUE, $3) ON CONFLICT (key) DO UPDATE SET"
    " hits = ARRAY(SELECT h FROM unnest(w.hits) AS h WHERE $3 - h < $4)"
    f" || CASE WHEN {_UNDER_LIMIT} THEN ARRAY[$3::float8] ELSE '{{}}'::float8[] END,"
    f" allowed = {_UNDER_LIMIT},"
    f" last_at = CASE WHEN {_UNDER_LIMIT} THEN $3 ELSE w.last_at END"
    " RETURNING allowed"
)
_NOTICE_SQL = (
    "INSERT INTO notice_windows AS n (scope, key, said_at, expires_at)"
    " VALUES ($1, $2, $3::float8, $3::float8 + $4::float8)"
    " ON CONFLICT (scope, key) DO UPDATE SET said_at = excluded.said_at,"
    " expires_at = excluded.expires_at WHERE $3::float8 - n.said_at >= $4::float8"
    " RETURNING TRUE"
)
_CACHE_ADMIN_SQL = (
    "INSERT INTO admin_cache(key, is_admin, expires_at) VALUES ($1, $2, $3)"
    " ON CONFLICT (key) DO UPDATE SET is_admin = excluded.is_admin,"
    " expires_at = excluded.expires_at"
)
_CHAT_SPEND_SQL = (
    "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) AS chat,"
    " coalesce(sum(prompt_tokens + completion_tokens) FILTER (WHERE user_id = $3), 0)"
    " AS member FROM usage WHERE " + CHAT_SPEND_WHERE.format(day="$1", chat="$2")
)
_TOTAL_SPEND_SQL = (
    "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) AS total FROM usage WHERE day = $1"
)
_PRUNE_SQL = (
    ("DELETE FROM rate_windows WHERE last_at <= $1", -RATE_WINDOW_SECONDS),
    ("DELETE FROM notice_windows WHERE expires_at <= $1", 0.0),
    ("DELETE FROM admin_cache WHERE expires_at <= $1", 0.0),
)


class PostgresLimits:
    """The PostgreSQL `SharedLimits` methods; `PostgresStore` inherits them."""

    _db: PostgresDatabase
    _clock: Callable[[], float]
    _limits_pruned_at: float = 0.0

    async def rate_hit(self, key: str, per_minute: int, now: float) -> bool:
        if per_minute <= 0:
            return True
        await self._prune(now)
        row = await self._db.write_one(_RATE_HIT_SQL, (key, per_minute, now, RATE_WINDOW_SECONDS))
        return bool(row["allowed"])

    async def notice_first(self, scope: str, key: str, interval_seconds: float, now: float) -> bool:
        await self._prune(now)
        return (
            await self._db.write_one(_NOTICE_SQL, (scope, key, now, interval_seconds)) is not None
        )

    async def notice_reset(self, scope: str) -> None:
        # Deleting nothing (nearly every answer) takes no transaction id and writes nothing.
        await self._db.write_one("DELETE FROM notice_windows WHERE scope = $1", (scope,))

    async def day_spend(
        self, chat_key: str, user_id: str | None, day: str, *, total: bool
    ) -> DaySpend:
        row = await self._db.fetchone(_CHAT_SPEND_SQL, (day, chat_key, user_id))
        everyone = await self._db.fetchone(_TOTAL_SPEND_SQL, (day,)) if total else None
        return DaySpend(
            int(row["chat"]) if row else 0,
            int(row["member"]) if row else 0,
            int(everyone["total"]) if everyone else 0,
        )

    async def cached_admin(self, key: str, now: float) -> bool | None:
        row = await self._db.fetchone(
            "SELECT is_admin FROM admin_cache WHERE key = $1 AND expires_at > $2", (key, now)
        )
        return None if row is None else bool(row["is_admin"])

    async def cache_admin(self, key: str, is_admin: bool, expires_at: float) -> None:
        await self._db.write_one(_CACHE_ADMIN_SQL, (key, is_admin, expires_at))

    async def _prune(self, now: float) -> None:
        """Delete expired limit rows, at most every LIMITS_PRUNE_INTERVAL_SECONDS per process."""
        if now - self._limits_pruned_at < LIMITS_PRUNE_INTERVAL_SECONDS:
            return
        self._limits_pruned_at = now
        async with self._db.transaction() as conn:
            for sql, offset in _PRUNE_SQL:
                await conn.execute(sql, now + offset)

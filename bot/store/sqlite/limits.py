"""The SQLite `SharedLimits`: each check is one transaction of the single writer, so it is atomic.

A check runs whole on the writer thread (`Database.run_in_writer`): one thread hop per check.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import TypeVar

from compactbot.bot.store.protocols.shared_limits import (
    CHAT_SPEND_WHERE,
    LIMITS_PRUNE_INTERVAL_SECONDS,
    RATE_WINDOW_SECONDS,
    DaySpend,
)
from compactbot.bot.store.sqlite.database import Database

T = TypeVar("T")

_NOTICE_SQL = (
    "INSERT INTO notice_windows(scope, key, said_at, expires_at) VALUES (?, ?, ?, ?)"
    " ON CONFLICT(scope, key) DO UPDATE SET said_at = excluded.said_at,"
    " expires_at = excluded.expires_at WHERE ? - notice_windows.said_at >= ?"
)
_CHAT_SPEND_SQL = (
    "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) AS chat,"
    " coalesce(sum(CASE WHEN user_id = ?1 THEN prompt_tokens + completion_tokens END), 0)"
    " AS member FROM usage WHERE " + CHAT_SPEND_WHERE.format(day="?2", chat="?3")
)
_TOTAL_SPEND_SQL = (
    "SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) AS total FROM usage WHERE day = ?"
)
_PRUNE_SQL = (
    ("DELETE FROM rate_windows WHERE last_at <= ?", -RATE_WINDOW_SECONDS),
    ("DELETE FROM notice_windows WHERE expires_at <= ?", 0.0),
    ("DELETE FROM admin_cache WHERE expires_at <= ?", 0.0),
)


def slide(hits: Sequence[float], per_minute: int, now: float) -> tuple[list[float], bool]:
    """The hits still in the window, with `now` added when fewer than `per_minute` remain."""
    kept = [hit for hit in hits if now - hit < RATE_WINDOW_SECONDS]
    if len(kept) >= per_minute:
        return kept, False
    return [*kept, now], True


class SqliteLimits:
    """The SQLite `SharedLimits` methods; `SqliteStore` inherits them."""

    _db: Database
    _limits_pruned_at: float = 0.0

    async def rate_hit(self, key: str, per_minute: int, now: float) -> bool:
        if per_minute <= 0:
            return True
        return await self._write(partial(_rate_hit, key=key, per_minute=per_minute, now=now), now)

    async def notice_first(self, scope: str, key: str, interval_seconds: float, now: float) -> bool:
        params = (scope, key, now, now + interval_seconds, now, interval_seconds)

        def first(conn: sqlite3.Connection) -> bool:
            return conn.execute(_NOTICE_SQL, params).rowcount == 1

        return await self._write(first, now)

    async def notice_reset(self, scope: str) -> None:
        # A read first: a chat that was never told anything (nearly every answer) costs no write.
        found = await self._db.fetchone("SELECT 1 FROM notice_windows WHERE scope = ?", (scope,))
        if found is None:
            return

        def reset(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM notice_windows WHERE scope = ?", (scope,))

        await self._db.run_in_writer(reset)

    async def day_spend(
        self, chat_key: str, user_id: str | None, day: str, *, total: bool
    ) -> DaySpend:
        row = await self._db.fetchone(_CHAT_SPEND_SQL, (user_id, day, chat_key))
        everyone = await self._db.fetchone(_TOTAL_SPEND_SQL, (day,)) if total else None
        return DaySpend(
            int(row["chat"]) if row else 0,
            int(row["member"]) if row else 0,
            int(everyone["total"]) if everyone else 0,
        )

    async def cached_admin(self, key: str, now: float) -> bool | None:
        row = await self._db.fetchone(
            "SELECT is_admin FROM admin_cache WHERE key = ? AND expires_at > ?", (key, now)
        )
        return None if row is None else bool(row["is_admin"])

    async def cache_admin(self, key: str, is_admin: bool, expires_at: float) -> None:
        def put(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO admin_cache(key, is_admin, expires_at) VALUES (?, ?, ?)"
                " ON CONFLICT(key) DO UPDATE SET is_admin = excluded.is_admin,"
                " expires_at = excluded.expires_at",
                (key, int(is_admin), expires_at),
            )

        await self._db.run_in_writer(put)

    async def _write(self, fn: Callable[[sqlite3.Connection], T], now: float) -> T:
        """`fn` in one writer transaction, with the expired rows deleted now and then."""
        if now - self._limits_pruned_at < LIMITS_PRUNE_INTERVAL_SECONDS:
            return await self._db.run_in_writer(fn)
        result = await self._db.run_in_writer(partial(_pruned, fn=fn, now=now))
        self._limits_pruned_at = now
        return result


def _rate_hit(conn: sqlite3.Connection, *, key: str, per_minute: int, now: float) -> bool:
    row = conn.execute("SELECT hits FROM rate_windows WHERE key = ?", (key,)).fetchone()
    hits, allowed = slide(json.loads(row[0]) if row is not None else [], per_minute, now)
    conn.execute(
        "INSERT INTO rate_windows(key, hits, last_at) VALUES (?, ?, ?)"
        " ON CONFLICT(key) DO UPDATE SET hits = excluded.hits, last_at = excluded.last_at",
        (key, json.dumps(hits), max(hits)),
    )
    return allowed


def _pruned(conn: sqlite3.Connection, *, fn: Callable[[sqlite3.Connection], T], now: float) -> T:
    for sql, offset in _PRUNE_SQL:
        conn.execute(sql, (now + offset,))
    return fn(conn)

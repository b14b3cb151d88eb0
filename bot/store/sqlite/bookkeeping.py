"""Side tables of the SQLite store: compression locks, chat settings, events, usage, dedup, pins."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import CompressionEvent, LockRecord, Pin, UsagePurpose, UsageRow
from compactbot.bot.store.settings_cache import RawSettingsCache
from compactbot.bot.store.sqlite.compaction import (
    INSERT_EVENT_SQL,
    event_params,
    mark_processed,
    prune_processed,
)
from compactbot.bot.store.sqlite.database import Database, one

ADD_USAGE_SQL = (
    "INSERT INTO usage(chat_key, user_id, day, purpose, prompt_tokens,"
    " completion_tokens, calls) VALUES (?, ?, ?, ?, ?, ?, 1)"
    " ON CONFLICT(chat_key, user_id, day, purpose) DO UPDATE SET"
    " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
    " completion_tokens = completion_tokens + excluded.completion_tokens,"
    " calls = calls + 1"
)


class Bookkeeping:
    """The `Store` methods that do not touch messages; `SqliteStore` inherits them."""

    _db: Database
    _clock: Callable[[], float]
    _last_prune: float = 0.0
    _settings_cache: RawSettingsCache

    # compression lock

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

    # per-chat settings

    async def get_chat_settings(self, chat_key: str) -> dict[str, str]:
        cached = self._settings_cache.get(chat_key)
        if cached is not None:
            return cached
        found = await self._db.fetchall(
            "SELECT key, value FROM chat_settings WHERE chat_key = ?", (chat_key,)
        )
        values = {r["key"]: r["value"] for r in found}
        self._settings_cache.put(chat_key, values)
        return values

    async def set_chat_setting(self, chat_key: str, key: str, value: str) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO chat_settings(chat_key, key, value) VALUES (?, ?, ?)"
                " ON CONFLICT(chat_key, key) DO UPDATE SET value = excluded.value",
                (chat_key, key, value),
            )
        self._settings_cache.drop(chat_key)

    async def unset_chat_setting(self, chat_key: str, key: str) -> bool:
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "DELETE FROM chat_settings WHERE chat_key = ? AND key = ?", (chat_key, key)
            )
        self._settings_cache.drop(chat_key)
        return cur.rowcount == 1

    # events, usage, dedup, pins

    async def record_compression_event(self, event: CompressionEvent) -> int:
        async with self._db.transaction() as conn:
            cur = await conn.execute(INSERT_EVENT_SQL, event_params(event))
        return int(cur.lastrowid or 0)

    async def list_compression_events(
        self, *, chat_key: str | None = None, limit: int = 50
    ) -> list[CompressionEvent]:
        found = await self._db.fetchall(
            "SELECT * FROM compression_events WHERE (? IS NULL OR chat_key = ?)"
            " ORDER BY id DESC LIMIT ?",
            (chat_key, chat_key, limit),
        )
        return [rows.event_from_row(r) for r in found]

    async def add_usage(
        self,
        chat_key: str,
        user_id: str | None,
        purpose: UsagePurpose,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        day: str | None = None,
    ) -> None:
        day = day or datetime.fromtimestamp(self._clock(), UTC).date().isoformat()
        params = (chat_key, user_id or "", day, purpose, prompt_tokens, completion_tokens)
        # Once per model call: one writer-thread hop instead of BEGIN, INSERT and COMMIT apart.
        await self._db.run_in_writer(partial(_add_usage, params=params))

    async def usage(self, chat_key: str, since_day: str) -> list[UsageRow]:
        found = await self._db.fetchall(
            "SELECT * FROM usage WHERE chat_key = ? AND day >= ? ORDER BY day, user_id, purpose",
            (chat_key, since_day),
        )
        return [rows.usage_from_row(r) for r in found]

    async def mark_update_processed(self, platform: str, update_id: str) -> bool:
        now = self._clock()
        async with self._db.transaction() as conn:
            inserted = await mark_processed(conn, platform, update_id, now)
            self._last_prune = await prune_processed(conn, now, self._last_prune)
        return inserted

    async def add_pin(self, chat_key: str, text: str, author: str | None) -> Pin:
        now = self._clock()
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "INSERT INTO pins(chat_key, text, author, created_at) VALUES (?, ?, ?, ?)",
                (chat_key, text, author, now),
            )
        return Pin(
            id=int(cur.lastrowid or 0), chat_key=chat_key, text=text, author=author, created_at=now
        )

    async def list_pins(self, chat_key: str) -> list[Pin]:
        found = await self._db.fetchall(
            "SELECT * FROM pins WHERE chat_key = ? ORDER BY id", (chat_key,)
        )
        return [rows.pin_from_row(r) for r in found]

    async def remove_pin(self, chat_key: str, pin_id: int) -> bool:
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "DELETE FROM pins WHERE chat_key = ? AND id = ?", (chat_key, pin_id)
            )
        return cur.rowcount == 1


def _add_usage(conn: sqlite3.Connection, params: tuple[Any, ...]) -> None:
    conn.execute(ADD_USAGE_SQL, params)

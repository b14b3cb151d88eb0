"""Side tables of the PostgreSQL store: locks, chat settings, events, usage, dedup, pins.

Method for method bot/store/sqlite/bookkeeping.py in PostgreSQL's dialect.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from compactbot.bot.store import rows
from compactbot.bot.store.base import CompressionEvent, LockRecord, Pin, UsagePurpose, UsageRow
from compactbot.bot.store.dead_letters import (
    MAX_ERROR_CHARS,
    MAX_PAYLOAD_CHARS,
    DeadLetter,
    dead_letter_from_row,
)
from compactbot.bot.store.postgres.database import PostgresDatabase, affected
from compactbot.bot.store.settings_cache import RawSettingsCache
from compactbot.bot.store.sqlite.compaction import (
    PROCESSED_UPDATES_KEEP_SECONDS,
    PRUNE_INTERVAL_SECONDS,
    event_params,
)

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

INSERT_EVENT_SQL = (
    "INSERT INTO compression_events(chat_key, session_id, trigger, started_at,"
    " ended_at, outcome, messages_before, messages_after, tokens_before,"
    " tokens_after, summary_tokens, error, summary_calls, summary_cost_tokens)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id"
)


class PostgresBookkeeping:
    """The `Store` methods that do not touch messages; `PostgresStore` inherits them."""

    _db: PostgresDatabase
    _clock: Callable[[], float]
    _last_prune: float = 0.0
    _settings_cache: RawSettingsCache

    # compression lock

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

    # per-chat settings

    async def get_chat_settings(self, chat_key: str) -> dict[str, str]:
        cached = self._settings_cache.get(chat_key)
        if cached is not None:
            return cached
        found = await self._db.fetchall(
            "SELECT key, value FROM chat_settings WHERE chat_key = $1", (chat_key,)
        )
        values = {r["key"]: r["value"] for r in found}
        self._settings_cache.put(chat_key, values)
        return values

    async def set_chat_setting(self, chat_key: str, key: str, value: str) -> None:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO chat_settings(chat_key, key, value) VALUES ($1, $2, $3)"
                " ON CONFLICT(chat_key, key) DO UPDATE SET value = excluded.value",
                chat_key,
                key,
                value,
            )
        self._settings_cache.drop(chat_key)

    async def unset_chat_setting(self, chat_key: str, key: str) -> bool:
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "DELETE FROM chat_settings WHERE chat_key = $1 AND key = $2", chat_key, key
            )
        self._settings_cache.drop(chat_key)
        return affected(status) == 1

    # events, usage, dedup, pins

    async def record_compression_event(self, event: CompressionEvent) -> int:
        async with self._db.transaction() as conn:
            event_id = await conn.fetchval(INSERT_EVENT_SQL, *event_params(event))
        return int(event_id)

    async def list_compression_events(
        self, *, chat_key: str | None = None, limit: int = 50
    ) -> list[CompressionEvent]:
        found = await self._db.fetchall(
            "SELECT * FROM compression_events WHERE ($1::text IS NULL OR chat_key = $1)"
            " ORDER BY id DESC LIMIT $2",
            (chat_key, limit),
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
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO usage(chat_key, user_id, day, purpose, prompt_tokens,"
                " completion_tokens, calls) VALUES ($1, $2, $3, $4, $5, $6, 1)"
                " ON CONFLICT(chat_key, user_id, day, purpose) DO UPDATE SET"
                " prompt_tokens = usage.prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = usage.completion_tokens + excluded.completion_tokens,"
                " calls = usage.calls + 1",
                chat_key,
                user_id or "",
                day,
                purpose,
                prompt_tokens,
                completion_tokens,
            )

    async def usage(self, chat_key: str, since_day: str) -> list[UsageRow]:
        found = await self._db.fetchall(
            "SELECT * FROM usage WHERE chat_key = $1 AND day >= $2"
            ' ORDER BY day, user_id COLLATE "C", purpose',
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
            pin_id = await conn.fetchval(
                "INSERT INTO pins(chat_key, text, author, created_at) VALUES ($1, $2, $3, $4)"
                " RETURNING id",
                chat_key,
                text,
                author,
                now,
            )
        return Pin(id=int(pin_id), chat_key=chat_key, text=text, author=author, created_at=now)

    async def list_pins(self, chat_key: str) -> list[Pin]:
        found = await self._db.fetchall(
            "SELECT * FROM pins WHERE chat_key = $1 ORDER BY id", (chat_key,)
        )
        return [rows.pin_from_row(r) for r in found]

    async def remove_pin(self, chat_key: str, pin_id: int) -> bool:
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "DELETE FROM pins WHERE chat_key = $1 AND id = $2", chat_key, pin_id
            )
        return affected(status) == 1

    # dead letters

    async def record_dead_letter(
        self, platform: str, update_id: str, error: str, payload: str
    ) -> bool:
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "INSERT INTO dead_letters(platform, update_id, received_at, error, payload)"
                " VALUES ($1, $2, $3, $4, $5) ON CONFLICT(platform, update_id) DO NOTHING",
                platform,
                str(update_id),
                self._clock(),
                error[:MAX_ERROR_CHARS],
                payload[:MAX_PAYLOAD_CHARS],
            )
        return affected(status) == 1

    async def list_dead_letters(self, limit: int = 50) -> list[DeadLetter]:
        found = await self._db.fetchall(
            "SELECT * FROM dead_letters ORDER BY id DESC LIMIT $1", (limit,)
        )
        return [dead_letter_from_row(r) for r in found]


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

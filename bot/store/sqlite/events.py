"""The SQLite `CompressionEventStore`: one row per compaction, for reports."""

from __future__ import annotations

from compactbot.bot.store import rows
from compactbot.bot.store.base import CompressionEvent
from compactbot.bot.store.rows import event_params
from compactbot.bot.store.sqlite.database import Database

INSERT_EVENT_SQL = (
    "INSERT INTO compression_events(chat_key, session_id, trigger, started_at,"
    " ended_at, outcome, messages_before, messages_after, tokens_before,"
    " tokens_after, summary_tokens, error, summary_calls, summary_cost_tokens)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


class SqliteEvents:
    """`CompressionEventStore` of `SqliteStore`."""

    _db: Database

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

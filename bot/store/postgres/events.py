"""The PostgreSQL `CompressionEventStore`: one row per compaction, for reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compactbot.bot.store import rows
from compactbot.bot.store.base import CompressionEvent
from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.rows import event_params

if TYPE_CHECKING:
    pass


INSERT_EVENT_SQL = (
    "INSERT INTO compression_events(chat_key, session_id, trigger, started_at,"
    " ended_at, outcome, messages_before, messages_after, tokens_before,"
    " tokens_after, summary_tokens, error, summary_calls, summary_cost_tokens)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id"
)


class PostgresEvents:
    """`CompressionEventStore` of `PostgresStore`."""

    _db: PostgresDatabase

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

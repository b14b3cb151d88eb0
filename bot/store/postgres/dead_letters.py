"""The PostgreSQL `DeadLetterStore`: updates that could not be ingested, kept for the operator."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from compactbot.bot.store.postgres.database import PostgresDatabase, affected
from compactbot.bot.store.protocols.dead_letters import (
    MAX_ERROR_CHARS,
    MAX_PAYLOAD_CHARS,
    DeadLetter,
    dead_letter_from_row,
)

if TYPE_CHECKING:
    pass


class PostgresDeadLetters:
    """`DeadLetterStore` of `PostgresStore`."""

    _db: PostgresDatabase
    _clock: Callable[[], float]

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

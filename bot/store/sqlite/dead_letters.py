"""The SQLite `DeadLetterStore`: updates that could not be ingested, kept for the operator."""

from __future__ import annotations

from collections.abc import Callable

from compactbot.bot.store.base import DeadLetter
from compactbot.bot.store.protocols.dead_letters import (
    MAX_ERROR_CHARS,
    MAX_PAYLOAD_CHARS,
    dead_letter_from_row,
)
from compactbot.bot.store.sqlite.database import Database


class SqliteDeadLetters:
    """`DeadLetterStore` of `SqliteStore`."""

    _db: Database
    _clock: Callable[[], float]

    async def record_dead_letter(
        self, platform: str, update_id: str, error: str, payload: str
    ) -> bool:
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "INSERT OR IGNORE INTO dead_letters(platform, update_id, received_at, error,"
                " payload) VALUES (?, ?, ?, ?, ?)",
                (
                    platform,
                    str(update_id),
                    self._clock(),
                    error[:MAX_ERROR_CHARS],
                    payload[:MAX_PAYLOAD_CHARS],
                ),
            )
        return cur.rowcount == 1

    async def list_dead_letters(self, limit: int = 50) -> list[DeadLetter]:
        found = await self._db.fetchall(
            "SELECT * FROM dead_letters ORDER BY id DESC LIMIT ?", (limit,)
        )
        return [dead_letter_from_row(r) for r in found]

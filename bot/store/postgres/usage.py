"""The PostgreSQL `UsageStore`: tokens and calls per chat, member, day and purpose."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from compactbot.bot.store import rows
from compactbot.bot.store.base import UsagePurpose, UsageRow
from compactbot.bot.store.postgres.database import PostgresDatabase

if TYPE_CHECKING:
    pass


class PostgresUsage:
    """`UsageStore` of `PostgresStore`."""

    _db: PostgresDatabase
    _clock: Callable[[], float]

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

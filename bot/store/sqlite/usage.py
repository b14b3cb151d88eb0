"""The SQLite `UsageStore`: tokens and calls per chat, member, day and purpose."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from typing import Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import UsagePurpose, UsageRow
from compactbot.bot.store.sqlite.database import Database

ADD_USAGE_SQL = (
    "INSERT INTO usage(chat_key, user_id, day, purpose, prompt_tokens,"
    " completion_tokens, calls) VALUES (?, ?, ?, ?, ?, ?, 1)"
    " ON CONFLICT(chat_key, user_id, day, purpose) DO UPDATE SET"
    " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
    " completion_tokens = completion_tokens + excluded.completion_tokens,"
    " calls = calls + 1"
)


class SqliteUsage:
    """`UsageStore` of `SqliteStore`."""

    _db: Database
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
        params = (chat_key, user_id or "", day, purpose, prompt_tokens, completion_tokens)
        # Once per model call: one writer-thread hop instead of BEGIN, INSERT and COMMIT apart.
        await self._db.run_in_writer(partial(_add_usage, params=params))

    async def usage(self, chat_key: str, since_day: str) -> list[UsageRow]:
        found = await self._db.fetchall(
            "SELECT * FROM usage WHERE chat_key = ? AND day >= ? ORDER BY day, user_id, purpose",
            (chat_key, since_day),
        )
        return [rows.usage_from_row(r) for r in found]


def _add_usage(conn: sqlite3.Connection, params: tuple[Any, ...]) -> None:
    conn.execute(ADD_USAGE_SQL, params)

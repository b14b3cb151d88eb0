"""The SQLite `PinStore`: the facts an admin pinned in a chat."""

from __future__ import annotations

from collections.abc import Callable

from compactbot.bot.store import rows
from compactbot.bot.store.base import Pin
from compactbot.bot.store.sqlite.database import Database


class SqlitePins:
    """`PinStore` of `SqliteStore`."""

    _db: Database
    _clock: Callable[[], float]

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

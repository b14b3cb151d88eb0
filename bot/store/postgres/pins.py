"""The PostgreSQL `PinStore`: the facts an admin pinned in a chat."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from compactbot.bot.store import rows
from compactbot.bot.store.base import Pin
from compactbot.bot.store.postgres.database import PostgresDatabase, affected

if TYPE_CHECKING:
    pass


class PostgresPins:
    """`PinStore` of `PostgresStore`."""

    _db: PostgresDatabase
    _clock: Callable[[], float]

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

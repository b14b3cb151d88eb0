"""The PostgreSQL `SettingsStore`: per-chat settings, read through the in-memory cache."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compactbot.bot.store.postgres.database import PostgresDatabase, affected
from compactbot.bot.store.settings_cache import RawSettingsCache

if TYPE_CHECKING:
    pass


class PostgresSettings:
    """`SettingsStore` of `PostgresStore`."""

    _db: PostgresDatabase
    _settings_cache: RawSettingsCache

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

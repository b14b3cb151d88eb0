"""The SQLite `ChatStore`: chat rows, and moving a chat with all it owns to a new key."""

from __future__ import annotations

import logging
from collections.abc import Callable

from compactbot.bot.store import rows
from compactbot.bot.store.base import ChatRecord
from compactbot.bot.store.settings_cache import RawSettingsCache
from compactbot.bot.store.sqlite.database import Database, one

log = logging.getLogger(__name__)


class SqliteChats:
    """The `ChatStore` methods of `SqliteStore`."""

    _db: Database
    _clock: Callable[[], float]
    _settings_cache: RawSettingsCache

    async def upsert_chat(
        self,
        key: str,
        platform: str,
        *,
        title: str | None = None,
        parent_key: str | None = None,
        is_group: bool = True,
    ) -> ChatRecord:
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO chats(key, platform, title, parent_key, is_group, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET"
                " title = coalesce(excluded.title, title),"
                " parent_key = coalesce(excluded.parent_key, parent_key),"
                " is_group = excluded.is_group",
                (key, platform, title, parent_key, int(is_group), self._clock()),
            )
            row = await one(conn, "SELECT * FROM chats WHERE key = ?", (key,))
        return rows.chat_from_row(row)

    async def get_chat(self, key: str) -> ChatRecord | None:
        row = await self._db.fetchone("SELECT * FROM chats WHERE key = ?", (key,))
        return rows.chat_from_row(row) if row else None

    async def list_chats(self) -> list[ChatRecord]:
        return [
            rows.chat_from_row(r)
            for r in await self._db.fetchall("SELECT * FROM chats ORDER BY key")
        ]

    async def migrate_chat(self, old_key: str, new_key: str) -> None:
        """Move a chat and everything it owns to a new key (Telegram group → supergroup)."""
        if old_key == new_key:
            return
        async with self._db.transaction() as conn:
            if await one(conn, "SELECT 1 FROM chats WHERE key = ?", (old_key,)) is None:
                return
            await conn.execute(
                "INSERT OR IGNORE INTO chats(key, platform, title, parent_key, is_group,"
                " created_at) SELECT ?, platform, title, parent_key, is_group, created_at"
                " FROM chats WHERE key = ?",
                (new_key, old_key),
            )
            # The new chat may already have opened a session for the same scope (its first
            # message raced the migration notice); the old one holds the history and stays open.
            await conn.execute(
                "UPDATE sessions SET ended_at = ? WHERE chat_key = ? AND ended_at IS NULL"
                " AND coalesce(scope_user, '') IN (SELECT coalesce(scope_user, '') FROM sessions"
                " WHERE chat_key = ? AND ended_at IS NULL)",
                (self._clock(), new_key, old_key),
            )
            for table in ("sessions", "pins", "compression_events"):
                await conn.execute(
                    f"UPDATE {table} SET chat_key = ? WHERE chat_key = ?", (new_key, old_key)
                )
            await conn.execute(
                "INSERT OR IGNORE INTO chat_settings(chat_key, key, value)"
                " SELECT ?, key, value FROM chat_settings WHERE chat_key = ?",
                (new_key, old_key),
            )
            await conn.execute(
                "INSERT INTO usage(chat_key, user_id, day, purpose, prompt_tokens,"
                " completion_tokens, calls) SELECT ?, user_id, day, purpose, prompt_tokens,"
                " completion_tokens, calls FROM usage WHERE chat_key = ?"
                " ON CONFLICT(chat_key, user_id, day, purpose) DO UPDATE SET"
                " prompt_tokens = prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = completion_tokens + excluded.completion_tokens,"
                " calls = calls + excluded.calls",
                (new_key, old_key),
            )
            for table in ("chat_settings", "usage"):
                await conn.execute(f"DELETE FROM {table} WHERE chat_key = ?", (old_key,))
            await conn.execute(
                "UPDATE chats SET parent_key = ? WHERE parent_key = ?", (new_key, old_key)
            )
            await conn.execute("DELETE FROM chats WHERE key = ?", (old_key,))
        self._settings_cache.drop(old_key)
        self._settings_cache.drop(new_key)
        log.info("chat migrated (chat=%s new_chat=%s)", old_key, new_key)

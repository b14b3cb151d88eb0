"""The PostgreSQL `ChatStore`: bot/store/sqlite/chats.py in PostgreSQL's dialect."""

from __future__ import annotations

import logging
from collections.abc import Callable

from compactbot.bot.store import rows
from compactbot.bot.store.base import ChatRecord
from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.settings_cache import RawSettingsCache

log = logging.getLogger(__name__)


class PostgresChats:
    """The `ChatStore` methods of `PostgresStore`."""

    _db: PostgresDatabase
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
        row = await self._db.fetchone(
            "INSERT INTO chats(key, platform, title, parent_key, is_group, created_at)"
            " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT(key) DO UPDATE SET"
            " title = coalesce(excluded.title, chats.title),"
            " parent_key = coalesce(excluded.parent_key, chats.parent_key),"
            " is_group = excluded.is_group RETURNING *",
            (key, platform, title, parent_key, is_group, self._clock()),
        )
        return rows.chat_from_row(row)

    async def get_chat(self, key: str) -> ChatRecord | None:
        row = await self._db.fetchone("SELECT * FROM chats WHERE key = $1", (key,))
        return rows.chat_from_row(row) if row else None

    async def list_chats(self) -> list[ChatRecord]:
        return [
            rows.chat_from_row(r)
            for r in await self._db.fetchall('SELECT * FROM chats ORDER BY key COLLATE "C"')
        ]

    async def migrate_chat(self, old_key: str, new_key: str) -> None:
        """Move a chat and everything it owns to a new key (Telegram group → supergroup)."""
        if old_key == new_key:
            return
        async with self._db.transaction() as conn:
            if (
                await conn.fetchrow("SELECT 1 FROM chats WHERE key = $1 FOR UPDATE", old_key)
                is None
            ):
                return
            await conn.execute(
                "INSERT INTO chats(key, platform, title, parent_key, is_group, created_at)"
                " SELECT $1, platform, title, parent_key, is_group, created_at"
                " FROM chats WHERE key = $2 ON CONFLICT(key) DO NOTHING",
                new_key,
                old_key,
            )
            # The new chat may already have opened a session for the same scope (its first
            # message raced the migration notice); the old one holds the history and stays open.
            await conn.execute(
                "UPDATE sessions SET ended_at = $1 WHERE chat_key = $2 AND ended_at IS NULL"
                " AND coalesce(scope_user, '') IN (SELECT coalesce(scope_user, '') FROM sessions"
                " WHERE chat_key = $3 AND ended_at IS NULL)",
                self._clock(),
                new_key,
                old_key,
            )
            for table in ("sessions", "pins", "compression_events"):
                await conn.execute(
                    f"UPDATE {table} SET chat_key = $1 WHERE chat_key = $2", new_key, old_key
                )
            await conn.execute(
                "INSERT INTO chat_settings(chat_key, key, value)"
                " SELECT $1, key, value FROM chat_settings WHERE chat_key = $2"
                " ON CONFLICT(chat_key, key) DO NOTHING",
                new_key,
                old_key,
            )
            await conn.execute(
                "INSERT INTO usage(chat_key, user_id, day, purpose, prompt_tokens,"
                " completion_tokens, calls) SELECT $1, user_id, day, purpose, prompt_tokens,"
                " completion_tokens, calls FROM usage WHERE chat_key = $2"
                " ON CONFLICT(chat_key, user_id, day, purpose) DO UPDATE SET"
                " prompt_tokens = usage.prompt_tokens + excluded.prompt_tokens,"
                " completion_tokens = usage.completion_tokens + excluded.completion_tokens,"
                " calls = usage.calls + excluded.calls",
                new_key,
                old_key,
            )
            for table in ("chat_settings", "usage"):
                await conn.execute(f"DELETE FROM {table} WHERE chat_key = $1", old_key)
            await conn.execute(
                "UPDATE chats SET parent_key = $1 WHERE parent_key = $2", new_key, old_key
            )
            await conn.execute("DELETE FROM chats WHERE key = $1", old_key)
        self._settings_cache.drop(old_key)
        self._settings_cache.drop(new_key)
        log.info("chat migrated (chat=%s new_chat=%s)", old_key, new_key)

"""The PostgreSQL `Store`: chats, sessions, messages, fenced compaction and trigram search.

Method for method the SQLite store (bot/store/sqlite/store.py) in PostgreSQL's dialect. Writers
of one session are ordered by the session row's lock, which every write of it takes first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import (
    ChatRecord,
    SearchHit,
    SessionNotFound,
    SessionRecord,
    StoredMessage,
)
from compactbot.bot.store.hits import FETCH_FACTOR, clamp_limit, distinct_hits
from compactbot.bot.store.postgres import rows as postgres_rows
from compactbot.bot.store.postgres.appends import OPEN_SESSION_SQL, start_session
from compactbot.bot.store.postgres.bookkeeping import PostgresBookkeeping
from compactbot.bot.store.postgres.compaction import (
    COUNT_ACTIVE_SQL,
    WRITE_STATE_SQL,
    PostgresWrites,
)
from compactbot.bot.store.postgres.console import PostgresConsole
from compactbot.bot.store.postgres.database import PostgresDatabase, affected, redacted_dsn
from compactbot.bot.store.postgres.forget import PostgresForget
from compactbot.bot.store.postgres.inbox import PostgresInbox
from compactbot.bot.store.postgres.limits import PostgresLimits
from compactbot.bot.store.postgres.memory import load_memory
from compactbot.bot.store.postgres.outbox import PostgresOutbox
from compactbot.bot.store.postgres.pacing import PostgresPacing
from compactbot.bot.store.postgres.revisions import PostgresRevisions
from compactbot.bot.store.postgres.tables import PostgresTables
from compactbot.bot.store.settings_cache import RawSettingsCache
from compactbot.compression.memory import Memory
from compactbot.compression.state import CompressorState

log = logging.getLogger(__name__)


class PostgresStore(
    PostgresWrites,
    PostgresBookkeeping,
    PostgresRevisions,
    PostgresLimits,
    PostgresConsole,
    PostgresForget,
):
    """`Store` on a PostgreSQL database (`postgresql://…`; `?search_path=` picks the schema)."""

    def __init__(self, dsn: str, *, clock: Callable[[], float] = time.time) -> None:
        self._db = PostgresDatabase(dsn)
        self._clock = clock
        self._last_prune = 0.0
        self._settings_cache = RawSettingsCache(clock)

    @property
    def location(self) -> str:
        """The DSN without its password, for logs and banners."""
        return redacted_dsn(self._db.dsn)

    @property
    def dsn(self) -> str:
        """The DSN as given (it may hold a password): for dedicated connections, never logs."""
        return self._db.dsn

    @property
    def cjk_trigrams(self) -> bool:
        """False when the database's ctype makes no trigrams of CJK text (search then scans)."""
        return self._db.cjk_trigrams

    def inbox(self) -> PostgresInbox:
        """The durable turn queue (workers, SPEC 15)."""
        return PostgresInbox(self._db, self._clock)

    def outbox(self) -> PostgresOutbox:
        """What finished turns said, awaiting delivery."""
        return PostgresOutbox(self._db, self._clock)

    def pacing(self) -> PostgresPacing:
        """Send slots every worker takes before a request leaves (a platform's limits)."""
        return PostgresPacing(self._db, self._clock)

    def tables(self) -> PostgresTables:
        """Raw whole-table access, for `compactbot store copy`."""
        return PostgresTables(self._db)

    def observe_commits(self, callback: Callable[[float], None]) -> None:
        """`callback(seconds)` after every committed write transaction (the metrics hook)."""
        self._db.on_commit = callback

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> PostgresStore:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # chats and sessions

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

    async def active_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        row = await self._db.fetchone(OPEN_SESSION_SQL, (chat_key, scope_user))
        if row is not None:
            return rows.session_from_row(row)
        async with self._db.transaction() as conn:
            row = await start_session(conn, chat_key, scope_user, self._clock())
        return rows.session_from_row(row)

    async def get_session(self, session_id: int) -> SessionRecord:
        row = await self._db.fetchone("SELECT * FROM sessions WHERE id = $1", (session_id,))
        if row is None:
            raise SessionNotFound(session_id)
        return rows.session_from_row(row)

    async def new_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE sessions SET ended_at = $1 WHERE chat_key = $2"
                " AND scope_user IS NOT DISTINCT FROM $3 AND ended_at IS NULL",
                self._clock(),
                chat_key,
                scope_user,
            )
            row = await start_session(conn, chat_key, scope_user, self._clock())
        return rows.session_from_row(row)

    async def list_sessions(self, chat_key: str | None = None) -> list[SessionRecord]:
        if chat_key is None:
            found = await self._db.fetchall("SELECT * FROM sessions ORDER BY id")
        else:
            found = await self._db.fetchall(
                "SELECT * FROM sessions WHERE chat_key = $1 ORDER BY id", (chat_key,)
            )
        return [rows.session_from_row(r) for r in found]

    async def save_compressor_state(self, session_id: int, state: CompressorState) -> None:
        await self._update_session(
            WRITE_STATE_SQL, (*postgres_rows.state_params(state), session_id)
        )

    async def set_system_prompt(self, session_id: int, prompt: str | None) -> None:
        await self._update_session(
            "UPDATE sessions SET system_prompt = $1 WHERE id = $2", (prompt, session_id)
        )

    async def _update_session(self, sql: str, params: Sequence[Any]) -> None:
        async with self._db.transaction() as conn:
            if affected(await conn.execute(sql, *params)) != 1:
                raise SessionNotFound(params[-1])

    # messages

    async def load_active(self, session_id: int) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT * FROM messages WHERE session_id = $1 AND active ORDER BY seq", (session_id,)
        )
        return [rows.message_from_row(r) for r in found]

    async def load_appended(
        self, session_id: int, after_id: int, version: int
    ) -> list[StoredMessage] | None:
        # One statement, so the rows and the version come from the same snapshot.
        found = await self._db.fetchall(_APPENDED_SQL, (after_id, session_id))
        if not found:
            raise SessionNotFound(session_id)
        if found[0]["current_version"] != version:
            return None
        return [rows.message_from_row(r) for r in found if r["id"] is not None]

    async def load_history(
        self, chat_key: str, *, include_archived: bool = True
    ) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.chat_key = $1 AND ($2 OR m.active) ORDER BY m.session_id, m.seq",
            (chat_key, include_archived),
        )
        return [rows.message_from_row(r) for r in found]

    async def count_archived(self, chat_key: str) -> int:
        row = await self._db.fetchone(
            "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.chat_key = $1 AND NOT m.active",
            (chat_key,),
        )
        return int(row[0])

    async def load_messages(self, session_id: int, ids: Sequence[int]) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT * FROM messages WHERE session_id = $1 AND id = ANY($2::bigint[]) ORDER BY id",
            (session_id, list(dict.fromkeys(ids))),
        )
        return [rows.message_from_row(r) for r in found]

    async def load_memory(self, session_id: int) -> Memory:
        return await load_memory(self._db, session_id)

    async def search(self, chat_key: str, query: str, limit: int = 10) -> list[SearchHit]:
        """Messages of every session of the chat, archived included, newest first."""
        needle = query.strip()
        if not needle:
            return []
        limit = clamp_limit(limit)
        # The trigram index serves ILIKE for needles of three characters or more; shorter
        # ones (and CJK under a ctype without CJK trigrams) are a scan of the chat's rows.
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found = await self._db.fetchall(
            _SEARCH_SQL, (chat_key, f"%{escaped}%", limit * FETCH_FACTOR)
        )
        return distinct_hits((rows.hit_from_row(r) for r in found), limit)

    async def recount(self, session_id: int) -> tuple[int, int]:
        row = await self._db.fetchone(COUNT_ACTIVE_SQL, (session_id,))
        return int(row[0]), int(row[1])


# The session row always comes back (with NULL message columns when nothing is new); the
# (session_id, active, seq) index makes this a scan of the active rows only.
_APPENDED_SQL = (
    "SELECT s.version AS current_version, m.* FROM sessions s"
    " LEFT JOIN messages m ON m.session_id = s.id AND m.active AND m.id > $1"
    " WHERE s.id = $2 ORDER BY m.seq"
)
_SEARCH_SQL = (
    "SELECT m.id, m.session_id, m.role, m.author_name, m.content, m.content_format,"
    " m.created_at, m.active FROM messages m JOIN sessions s ON s.id = m.session_id"
    " WHERE s.chat_key = $1 AND m.search_text ILIKE $2 ESCAPE '\\'"
    " ORDER BY m.id DESC LIMIT $3"
)

"""The SQLite `Store`: chats, sessions, messages, fenced compaction and full-text search."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import (
    ChatRecord,
    NewMessage,
    SearchHit,
    SessionNotFound,
    SessionRecord,
    StoredMessage,
    TurnFence,
)
from compactbot.bot.store.dead_letters import DeadLetters
from compactbot.bot.store.hits import FETCH_FACTOR, clamp_limit, distinct_hits
from compactbot.bot.store.memory_rows import SELECT_ENTRIES_SQL, SELECT_REREAD_SQL, memory_from_rows
from compactbot.bot.store.settings_cache import RawSettingsCache
from compactbot.bot.store.sqlite import appends as sqlite_appends
from compactbot.bot.store.sqlite.appends import OPEN_SESSION_SQL
from compactbot.bot.store.sqlite.bookkeeping import Bookkeeping
from compactbot.bot.store.sqlite.compaction import (
    COUNT_ACTIVE_SQL,
    CompactionWrites,
    refuse_fence,
    start_session,
)
from compactbot.bot.store.sqlite.console import SqliteConsole
from compactbot.bot.store.sqlite.database import Database, one
from compactbot.bot.store.sqlite.forget import SqliteForget
from compactbot.bot.store.sqlite.fts import QUIET_SECONDS, BackgroundIndexer
from compactbot.bot.store.sqlite.limits import SqliteLimits
from compactbot.bot.store.sqlite.migrations import TRIGRAM, indexed_text
from compactbot.bot.store.sqlite.revisions import Revisions
from compactbot.bot.store.sqlite.tables import SqliteTables
from compactbot.compression.memory import Memory
from compactbot.compression.state import CompressorState

log = logging.getLogger(__name__)

TRIGRAM_MIN_CHARS = 3  # the trigram tokenizer cannot match anything shorter
ID_BATCH = 500  # ids per IN (...) query, well under SQLite's variable limit


class SqliteStore(
    CompactionWrites, Bookkeeping, DeadLetters, Revisions, SqliteLimits, SqliteConsole, SqliteForget
):
    """`Store` on one SQLite file (or ":memory:"). Writes are serialised; reads use WAL."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
        index_quiet_seconds: float = QUIET_SECONDS,
    ) -> None:
        self._db = Database(path, read_only=read_only)
        self._fts = BackgroundIndexer(self._db, quiet_seconds=index_quiet_seconds)
        self._clock = clock
        self._last_prune = 0.0
        self._settings_cache = RawSettingsCache(clock)

    @property
    def fts_tokenizer(self) -> str:
        """`trigram` (substring search, CJK) or `unicode61` on SQLite older than 3.34."""
        return self._db.fts_tokenizer

    def tables(self) -> SqliteTables:
        """Raw whole-table access, for `compactbot store copy`."""
        return SqliteTables(self._db)

    def observe_commits(self, callback: Callable[[float], None]) -> None:
        """`callback(seconds)` after every committed write transaction (the metrics hook)."""
        self._db.on_commit = callback

    async def open(self) -> None:
        if self._db.is_open:
            return
        await self._db.open()
        if not self._db.read_only:
            self._fts.start()

    async def close(self) -> None:
        await self._fts.close()
        await self._db.close()

    async def index_pending(self) -> int:
        """Put every stored row in the full-text index now; how many were not yet in it."""
        return await self._fts.index_pending()

    async def __aenter__(self) -> SqliteStore:
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

    async def active_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        row = await self._db.fetchone(OPEN_SESSION_SQL, (chat_key, scope_user))
        if row is not None:
            return rows.session_from_row(row)
        async with self._db.transaction() as conn:
            row = await one(conn, OPEN_SESSION_SQL, (chat_key, scope_user))
            if row is None:
                row = await start_session(conn, chat_key, scope_user, self._clock())
        return rows.session_from_row(row)

    async def get_session(self, session_id: int) -> SessionRecord:
        row = await self._db.fetchone("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if row is None:
            raise SessionNotFound(session_id)
        return rows.session_from_row(row)

    async def new_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE sessions SET ended_at = ? WHERE chat_key = ? AND scope_user IS ?"
                " AND ended_at IS NULL",
                (self._clock(), chat_key, scope_user),
            )
            row = await start_session(conn, chat_key, scope_user, self._clock())
        return rows.session_from_row(row)

    async def list_sessions(self, chat_key: str | None = None) -> list[SessionRecord]:
        if chat_key is None:
            found = await self._db.fetchall("SELECT * FROM sessions ORDER BY id")
        else:
            found = await self._db.fetchall(
                "SELECT * FROM sessions WHERE chat_key = ? ORDER BY id", (chat_key,)
            )
        return [rows.session_from_row(r) for r in found]

    async def save_compressor_state(self, session_id: int, state: CompressorState) -> None:
        assignments = ", ".join(f"{column} = ?" for column in rows.STATE_COLUMNS)
        await self._update_session(
            f"UPDATE sessions SET {assignments} WHERE id = ?",
            (*rows.state_params(state), session_id),
        )

    async def set_system_prompt(self, session_id: int, prompt: str | None) -> None:
        await self._update_session(
            "UPDATE sessions SET system_prompt = ? WHERE id = ?", (prompt, session_id)
        )

    async def _update_session(self, sql: str, params: Sequence[Any]) -> None:
        async with self._db.transaction() as conn:
            cur = await conn.execute(sql, params)
            if cur.rowcount != 1:
                raise SessionNotFound(params[-1])

    # messages

    async def append_messages(
        self,
        session_id: int,
        messages: Sequence[NewMessage],
        *,
        fence: TurnFence | None = None,
    ) -> list[int]:
        refuse_fence(fence)
        return (await self.append_batch([(session_id, messages)]))[0]

    async def append_batch(
        self, items: Sequence[tuple[int, Sequence[NewMessage]]]
    ) -> list[list[int]]:
        """`append_messages` for several sessions in one transaction (all or nothing)."""
        now = self._clock()
        ids = await self._db.run_in_writer(
            partial(sqlite_appends.append_batch, items=items, now=now)
        )
        self._fts.added(sum(len(found) for found in ids))
        return ids

    async def load_active(self, session_id: int) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY seq", (session_id,)
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
            " WHERE s.chat_key = ? AND (? OR m.active = 1) ORDER BY m.session_id, m.seq",
            (chat_key, int(include_archived)),
        )
        return [rows.message_from_row(r) for r in found]

    async def count_archived(self, chat_key: str) -> int:
        found = await self._db.fetchall(
            "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.chat_key = ? AND m.active = 0",
            (chat_key,),
        )
        return int(found[0][0])

    async def load_messages(self, session_id: int, ids: Sequence[int]) -> list[StoredMessage]:
        wanted = list(dict.fromkeys(ids))
        found = []
        for start in range(0, len(wanted), ID_BATCH):
            batch = wanted[start : start + ID_BATCH]
            marks = ", ".join("?" * len(batch))
            found += await self._db.fetchall(
                f"SELECT * FROM messages WHERE session_id = ? AND id IN ({marks})",
                (session_id, *batch),
            )
        return sorted((rows.message_from_row(r) for r in found), key=lambda m: m.id)

    async def load_memory(self, session_id: int) -> Memory:
        entries = await self._db.fetchall(SELECT_ENTRIES_SQL, (session_id,))
        reread = await self._db.fetchall(SELECT_REREAD_SQL, (session_id,))
        return memory_from_rows(entries, reread)

    async def search(self, chat_key: str, query: str, limit: int = 10) -> list[SearchHit]:
        """Messages of every session of the chat, archived included, newest first."""
        needle = query.strip()
        if not needle:
            return []
        limit = clamp_limit(limit)
        fetch = limit * FETCH_FACTOR
        found: list[Any] = []
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = f"%{escaped}%"
        if self._db.fts_tokenizer != TRIGRAM or len(needle) >= TRIGRAM_MIN_CHARS:
            phrase = '"' + needle.replace('"', '""') + '"'
            if self._db.fts_watermark:
                params: tuple[Any, ...] = (phrase, chat_key, chat_key, pattern, fetch)
                found = await self._db.fetchall(_INDEX_AND_TAIL_SEARCH_SQL, params)
            else:
                found = await self._db.fetchall(_FTS_SEARCH_SQL, (phrase, chat_key, fetch))
        if not found:
            # Short needles, and CJK substrings under unicode61, only a scan can find.
            found = await self._db.fetchall(_LIKE_SEARCH_SQL, (chat_key, pattern, fetch))
        return distinct_hits((rows.hit_from_row(r) for r in found), limit)

    async def recount(self, session_id: int) -> tuple[int, int]:
        found = await self._db.fetchall(COUNT_ACTIVE_SQL, (session_id,))
        return int(found[0][0]), int(found[0][1])


# The session row always comes back (with NULL message columns when nothing is new); the
# (session_id, active, id) index makes this a range scan over the new rows only.
_APPENDED_SQL = (
    "SELECT s.version AS current_version, m.* FROM sessions s"
    " LEFT JOIN messages m ON m.session_id = s.id AND m.active = 1 AND m.id > ?"
    " WHERE s.id = ? ORDER BY m.seq"
)
_HIT_COLUMNS = (
    "m.id, m.session_id, m.role, m.author_name, m.content, m.content_format, m.created_at, m.active"
)
_FTS_SEARCH_SQL = (
    f"SELECT {_HIT_COLUMNS} FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
    " JOIN sessions s ON s.id = m.session_id"
    " WHERE messages_fts MATCH ? AND s.chat_key = ? ORDER BY m.id DESC LIMIT ?"
)
# The index up to the watermark and a scan of the rows above it (not yet indexed), read in one
# statement so both halves see the same watermark.
_INDEX_AND_TAIL_SEARCH_SQL = (
    f"SELECT {_HIT_COLUMNS} FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
    " JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ? AND s.chat_key = ?"
    f" UNION ALL SELECT {_HIT_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
    " WHERE m.id > (SELECT upto FROM fts_indexed) AND s.chat_key = ?"
    # 1 is m.id: a compound statement orders by result column.
    f" AND ({indexed_text('m')}) LIKE ? ESCAPE '\\' ORDER BY 1 DESC LIMIT ?"
)
# The scan looks at the text the index holds: a list content's text parts, not its JSON.
_LIKE_SEARCH_SQL = (
    f"SELECT {_HIT_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
    f" WHERE s.chat_key = ? AND ({indexed_text('m')}) LIKE ? ESCAPE '\\'"
    " ORDER BY m.id DESC LIMIT ?"
)

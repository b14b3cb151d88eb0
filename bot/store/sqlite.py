"""The SQLite `Store`: chats, sessions, messages, fenced compaction and full-text search."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import aiosqlite

from bot.store import rows
from bot.store.base import (
    ChatRecord,
    CompactionCommit,
    NewMessage,
    SearchHit,
    SessionNotFound,
    SessionRecord,
    StoredMessage,
)
from bot.store.bookkeeping import Bookkeeping
from bot.store.database import Database, one
from bot.store.migrations import TRIGRAM
from bot.store.revisions import Revisions
from compression.state import CompressorState

log = logging.getLogger(__name__)

TRIGRAM_MIN_CHARS = 3  # the trigram tokenizer cannot match anything shorter
MAX_SEARCH_LIMIT = 100


class SqliteStore(Bookkeeping, Revisions):
    """`Store` on one SQLite file (or ":memory:"). Writes are serialised; reads use WAL."""

    def __init__(self, path: str | Path, *, clock: Callable[[], float] = time.time) -> None:
        self._db = Database(path)
        self._clock = clock
        self._last_prune = 0.0

    @property
    def fts_tokenizer(self) -> str:
        """`trigram` (substring search, CJK) or `unicode61` on SQLite older than 3.34."""
        return self._db.fts_tokenizer

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

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
        log.info("chat migrated (chat=%s new_chat=%s)", old_key, new_key)

    async def active_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        row = await self._db.fetchone(_OPEN_SESSION_SQL, (chat_key, scope_user))
        if row is not None:
            return rows.session_from_row(row)
        async with self._db.transaction() as conn:
            row = await one(conn, _OPEN_SESSION_SQL, (chat_key, scope_user))
            if row is None:
                row = await self._start_session(conn, chat_key, scope_user)
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
            row = await self._start_session(conn, chat_key, scope_user)
        return rows.session_from_row(row)

    async def _start_session(
        self, conn: aiosqlite.Connection, chat_key: str, scope_user: str | None
    ) -> Any:
        now = self._clock()
        platform = chat_key.split(":", 1)[0]
        await conn.execute(
            "INSERT OR IGNORE INTO chats(key, platform, created_at) VALUES (?, ?, ?)",
            (chat_key, platform, now),
        )
        cur = await conn.execute(
            "INSERT INTO sessions(chat_key, scope_user, started_at, last_activity_at)"
            " VALUES (?, ?, ?, ?)",
            (chat_key, scope_user, now, now),
        )
        return await one(conn, "SELECT * FROM sessions WHERE id = ?", (cur.lastrowid,))

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

    async def append_messages(self, session_id: int, messages: Sequence[NewMessage]) -> list[int]:
        if not messages:
            return []
        now = self._clock()
        async with self._db.transaction() as conn:
            cur = await conn.execute(
                "UPDATE sessions SET active_tokens = active_tokens + ?,"
                " active_messages = active_messages + ?, last_activity_at = ? WHERE id = ?",
                (sum(m.tokens for m in messages), len(messages), now, session_id),
            )
            if cur.rowcount != 1:
                raise SessionNotFound(session_id)
            base = await _max_seq(conn, session_id)
            await conn.executemany(
                rows.INSERT_MESSAGE_SQL,
                [
                    rows.message_params(m, session_id, base + i + 1, now)
                    for i, m in enumerate(messages)
                ],
            )
            found = await conn.execute_fetchall(
                "SELECT id FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq",
                (session_id, base),
            )
        return [r[0] for r in found]

    async def load_active(self, session_id: int) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY seq", (session_id,)
        )
        return [rows.message_from_row(r) for r in found]

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

    async def archive_and_compact(
        self, session: SessionRecord, compacted: Sequence[NewMessage], watermark: int
    ) -> CompactionCommit | None:
        sid = session.id
        now = self._clock()
        async with self._db.transaction() as conn:
            row = await one(conn, "SELECT version FROM sessions WHERE id = ?", (sid,))
            if row is None:
                raise SessionNotFound(sid)
            if row["version"] != session.version:
                log.info(
                    "compaction fenced out (chat=%s session=%d expected_version=%d version=%d)",
                    session.chat_key,
                    sid,
                    session.version,
                    row["version"],
                )
                return None
            # The fence is a position in the transcript, not an id: after a compaction the
            # compacted rows have higher ids than the survivors that follow them.
            mark = await one(
                conn,
                "SELECT seq FROM messages WHERE id = ? AND session_id = ? AND active = 1",
                (watermark, sid),
            )
            if mark is None:
                log.info("compaction watermark is gone (chat=%s session=%d)", session.chat_key, sid)
                return None
            cur = await conn.execute(
                "UPDATE messages SET active = 0, compacted = 1"
                " WHERE session_id = ? AND active = 1 AND seq <= ?",
                (sid, mark["seq"]),
            )
            archived = cur.rowcount
            # Rows newer than the watermark arrived while the summary was written: renumber them
            # after the compacted set so the transcript reads summary, tail, then the newcomers.
            survivors = await conn.execute_fetchall(
                "SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY seq", (sid,)
            )
            base = await _max_seq(conn, sid)
            await conn.executemany(
                rows.INSERT_MESSAGE_SQL,
                [rows.message_params(m, sid, base + i + 1, now) for i, m in enumerate(compacted)],
            )
            after = base + len(compacted)
            inserted = await conn.execute_fetchall(
                "SELECT id FROM messages"
                " WHERE session_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
                (sid, base, after),
            )
            await conn.executemany(
                "UPDATE messages SET seq = ? WHERE id = ?",
                [(after + i + 1, r[0]) for i, r in enumerate(survivors)],
            )
            tokens, count = await _count_active(conn, sid)
            version = session.version + 1
            await conn.execute(
                "UPDATE sessions SET active_tokens = ?, active_messages = ?, version = ?"
                " WHERE id = ?",
                (tokens, count, version, sid),
            )
        return CompactionCommit(
            archived=archived,
            inserted=len(compacted),
            active_tokens=tokens,
            active_messages=count,
            version=version,
            inserted_ids=tuple(r[0] for r in inserted),
        )

    async def search(self, chat_key: str, query: str, limit: int = 10) -> list[SearchHit]:
        """Messages of every session of the chat, archived included, newest first."""
        needle = query.strip()
        if not needle:
            return []
        limit = max(1, min(limit, MAX_SEARCH_LIMIT))
        # Fetch extra: a compaction copies the tail, so the same text can exist archived and active.
        fetch = limit * 3
        found: list[Any] = []
        if self._db.fts_tokenizer != TRIGRAM or len(needle) >= TRIGRAM_MIN_CHARS:
            phrase = '"' + needle.replace('"', '""') + '"'
            found = await self._db.fetchall(_FTS_SEARCH_SQL, (phrase, chat_key, fetch))
        if not found:
            # Short needles, and CJK substrings under unicode61, only a scan can find.
            escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            pattern = f"%{escaped}%"
            found = await self._db.fetchall(_LIKE_SEARCH_SQL, (chat_key, pattern, pattern, fetch))
        return _distinct_hits((rows.hit_from_row(r) for r in found), limit)

    async def recount(self, session_id: int) -> tuple[int, int]:
        found = await self._db.fetchall(_COUNT_ACTIVE_SQL, (session_id,))
        return int(found[0][0]), int(found[0][1])


_OPEN_SESSION_SQL = (
    "SELECT * FROM sessions WHERE chat_key = ? AND scope_user IS ? AND ended_at IS NULL"
)
_COUNT_ACTIVE_SQL = (
    "SELECT coalesce(sum(tokens), 0), count(*) FROM messages WHERE session_id = ? AND active = 1"
)
_HIT_COLUMNS = (
    "m.id, m.session_id, m.role, m.author_name, m.content, m.content_format, m.created_at, m.active"
)
_FTS_SEARCH_SQL = (
    f"SELECT {_HIT_COLUMNS} FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
    " JOIN sessions s ON s.id = m.session_id"
    " WHERE messages_fts MATCH ? AND s.chat_key = ? ORDER BY m.id DESC LIMIT ?"
)
_LIKE_SEARCH_SQL = (
    f"SELECT {_HIT_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
    " WHERE s.chat_key = ? AND (m.content LIKE ? ESCAPE '\\' OR m.tool_calls LIKE ? ESCAPE '\\')"
    " ORDER BY m.id DESC LIMIT ?"
)


async def _max_seq(conn: aiosqlite.Connection, session_id: int) -> int:
    row = await one(
        conn, "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?", (session_id,)
    )
    return int(row[0])


async def _count_active(conn: aiosqlite.Connection, session_id: int) -> tuple[int, int]:
    row = await one(conn, _COUNT_ACTIVE_SQL, (session_id,))
    return int(row[0]), int(row[1])


def _distinct_hits(hits: Iterable[SearchHit], limit: int) -> list[SearchHit]:
    seen: set[tuple[int, str, str]] = set()
    out: list[SearchHit] = []
    for hit in hits:
        key = (hit.session_id, hit.role, hit.text)
        if key not in seen:
            seen.add(key)
            out.append(hit)
            if len(out) == limit:
                break
    return out

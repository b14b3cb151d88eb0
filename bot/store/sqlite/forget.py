"""`ForgetStore` on SQLite: one writer transaction, then the text leaves the file's live pages.

The writer runs with secure_delete (bot/store/sqlite/database.py), so deleted cells are zeroed; the
full-text index is merged ('optimize') so no old segment keeps a forgotten token, and the WAL is
checkpointed and truncated so no old page image survives beside the database.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from compactbot.bot.store.forgetting import REWRITTEN_ROLES, ForgetPlan, TargetRow, TextRow, plan
from compactbot.bot.store.memory_rows import entry_params, memory_from_rows
from compactbot.bot.store.reply_quotes import QUOTE_MARK
from compactbot.bot.store.rows import decode_content
from compactbot.bot.store.sqlite.database import Database
from compactbot.bot.store.sqlite.memory import (
    INSERT_ENTRY_SQL,
    SELECT_ENTRIES_SQL,
    SELECT_REREAD_SQL,
)
from compactbot.compression.transcript import content_text

ID_BATCH = 500  # ids per IN (...), well under SQLite's variable limit
_ROW_COLUMNS = "m.id, m.session_id, m.active, m.tokens, m.content, m.content_format"
_CHAT_ROWS = f"SELECT {_ROW_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
# The rows and their copies: a compaction's copy keeps the row's role, time and text.
_COPIES_OF = (
    "EXISTS (SELECT 1 FROM messages t WHERE t.id IN ({marks}) AND t.role = m.role"
    " AND t.created_at = m.created_at AND t.content IS m.content)"
)
_MEMBERS = "m.role = 'user' AND m.kind = 'message'"
_ROLES = ", ".join(f"'{role}'" for role in REWRITTEN_ROLES)


class SqliteForget:
    """The `ForgetStore` methods; `SqliteStore` inherits them."""

    _db: Database
    _clock: Callable[[], float]

    async def forget_messages(
        self, chat_key: str, platform_message_ids: Sequence[str], *, author_id: str | None = None
    ) -> int:
        wanted = list(dict.fromkeys(platform_message_ids))
        forgotten = 0
        for start in range(0, len(wanted), ID_BATCH):
            batch: list[Any] = wanted[start : start + ID_BATCH]
            where = f"m.platform_message_id IN ({', '.join('?' * len(batch))})"
            if author_id is not None:
                where, batch = f"{where} AND m.author_id = ?", [*batch, author_id]
            forgotten += await self._forget(where, batch, chat_key)
        return forgotten

    async def forget_rows(self, chat_key: str, row_ids: Sequence[int]) -> int:
        wanted = list(dict.fromkeys(row_ids))
        forgotten = 0
        for start in range(0, len(wanted), ID_BATCH):
            batch = wanted[start : start + ID_BATCH]
            where = _COPIES_OF.format(marks=", ".join("?" * len(batch)))
            forgotten += await self._forget(where, batch, chat_key)
        return forgotten

    async def forget_member(self, chat_key: str, author_id: str) -> int:
        return await self._forget("m.author_id = ?", (author_id,), chat_key)

    async def forget_before(self, chat_key: str, cutoff: float) -> int:
        return await self._forget("m.created_at < ?", (cutoff,), chat_key)

    async def count_member_messages(self, chat_key: str, author_id: str) -> int:
        row = await self._db.fetchone(
            "SELECT count(DISTINCT coalesce(m.platform_message_id, m.id)) FROM messages m"
            " JOIN sessions s ON s.id = m.session_id WHERE s.chat_key = ? AND m.author_id = ?",
            (chat_key, author_id),
        )
        return int(row[0])

    async def _forget(self, where: str, params: Sequence[Any], chat_key: str) -> int:
        forgotten = await self._db.run_in_writer(
            partial(_forget_in, chat_key=chat_key, where=where, params=params)
        )
        if forgotten:
            await self._db.checkpoint()
        return forgotten


def _forget_in(
    conn: sqlite3.Connection, *, chat_key: str, where: str, params: Sequence[Any]
) -> int:
    found = conn.execute(f"{_CHAT_ROWS} WHERE s.chat_key = ? AND {where}", (chat_key, *params))
    targets = [
        TargetRow(
            r[0], r[1], bool(r[2]), r[3], content_text(decode_content(r[4], r[5])), r[4], r[5]
        )
        for r in found.fetchall()
    ]
    found.close()
    if not targets:
        return 0
    sessions = conn.execute(
        "SELECT id, previous_summary FROM sessions WHERE chat_key = ?", (chat_key,)
    ).fetchall()
    memories = {
        sid: memory_from_rows(
            conn.execute(SELECT_ENTRIES_SQL, (sid,)).fetchall(),
            conn.execute(SELECT_REREAD_SQL, (sid,)).fetchall(),
        )
        for sid, _ in sessions
    }
    text_rows = (
        TextRow(r[0], r[1], bool(r[2]), r[3], r[4], r[5], bool(r[6]))
        for r in conn.execute(
            f"SELECT {_ROW_COLUMNS}, {_MEMBERS} FROM messages m"
            " JOIN sessions s ON s.id = m.session_id WHERE s.chat_key = ? AND m.content IS NOT NULL"
            f" AND (m.kind = 'summary' OR m.role IN ({_ROLES}) OR instr(m.content, ?) > 0)",
            (chat_key, QUOTE_MARK),
        ).fetchall()
    )
    changes = plan(targets, memories, list(text_rows), dict(sessions))
    _apply(conn, changes)
    return len(targets)


def _apply(conn: sqlite3.Connection, changes: ForgetPlan) -> None:
    ids = changes.deleted
    for start in range(0, len(ids), ID_BATCH):
        batch = ids[start : start + ID_BATCH]
        marks = ", ".join("?" * len(batch))
        conn.execute(f"DELETE FROM message_revisions WHERE message_id IN ({marks})", batch)
        # The delete trigger takes each indexed row out of the full-text index.
        conn.execute(f"DELETE FROM messages WHERE id IN ({marks})", batch)
    for session_id, memory in changes.memories.items():
        conn.execute("DELETE FROM memory_entries WHERE session_id = ?", (session_id,))
        conn.execute("DELETE FROM memory_reread WHERE session_id = ?", (session_id,))
        conn.executemany(INSERT_ENTRY_SQL, [entry_params(session_id, e) for e in memory.entries])
        conn.executemany(
            "INSERT OR IGNORE INTO memory_reread (session_id, message_id) VALUES (?, ?)",
            [(session_id, message_id) for message_id in memory.reread],
        )
    conn.executemany(
        "UPDATE messages SET content = ?, content_format = ?, tokens = ?, hints = NULL"
        " WHERE id = ?",
        [(r.content, r.content_format, r.tokens, r.id) for r in changes.rewrites],
    )
    detached = [(r.id,) for r in changes.rewrites if r.detach]
    conn.executemany("DELETE FROM message_revisions WHERE message_id = ?", detached)
    conn.executemany(
        "UPDATE messages SET platform_message_id = NULL, author_id = NULL, author_name = NULL"
        " WHERE id = ?",
        detached,
    )
    conn.executemany(
        "UPDATE sessions SET previous_summary = ? WHERE id = ?",
        [(summary, sid) for sid, summary in changes.previous_summaries.items()],
    )
    # A new version: working sets reload, and a compaction that read the old text is fenced out.
    conn.executemany(
        "UPDATE sessions SET active_tokens = max(0, active_tokens - ?),"
        " active_messages = max(0, active_messages - ?), version = version + 1 WHERE id = ?",
        [(*changes.totals.get(sid, (0, 0)), sid) for sid in sorted(changes.sessions)],
    )
    # Deleted entries stay in older index segments until they are merged away.
    conn.execute("INSERT INTO messages_fts(messages_fts) VALUES ('optimize')")

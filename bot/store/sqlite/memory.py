"""The session memory on SQLite (migration 3; `author_ids`, migration 16): written whole inside
the compaction's transaction, with `memory_rows`' mapping."""

from __future__ import annotations

import aiosqlite

from compactbot.bot.store.memory_rows import ENTRY_COLUMNS, entry_params
from compactbot.compression.memory import Memory

INSERT_ENTRY_SQL = (
    f"INSERT INTO memory_entries ({ENTRY_COLUMNS})"
    f" VALUES ({', '.join('?' * (ENTRY_COLUMNS.count(',') + 1))})"
)
SELECT_ENTRIES_SQL = (
    f"SELECT {ENTRY_COLUMNS} FROM memory_entries WHERE session_id = ? ORDER BY entry_id"
)
SELECT_REREAD_SQL = "SELECT message_id FROM memory_reread WHERE session_id = ? ORDER BY rowid"


async def write_memory(conn: aiosqlite.Connection, session_id: int, memory: Memory) -> None:
    """Replace the session's memory; called inside an open transaction."""
    await conn.execute("DELETE FROM memory_entries WHERE session_id = ?", (session_id,))
    await conn.execute("DELETE FROM memory_reread WHERE session_id = ?", (session_id,))
    await conn.executemany(INSERT_ENTRY_SQL, [entry_params(session_id, e) for e in memory.entries])
    await conn.executemany(
        "INSERT OR IGNORE INTO memory_reread (session_id, message_id) VALUES (?, ?)",
        [(session_id, message_id) for message_id in memory.reread],
    )

"""The session memory on PostgreSQL (migration 3): `memory_rows`' mapping with `$n` parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from compactbot.bot.store.memory_rows import ENTRY_COLUMNS, entry_params, memory_from_rows
from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.compression.memory import Memory

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

_MARKS = ", ".join(f"${n}" for n in range(1, ENTRY_COLUMNS.count(",") + 2))
_INSERT_ENTRY_SQL = f"INSERT INTO memory_entries ({ENTRY_COLUMNS}) VALUES ({_MARKS})"
_SELECT_ENTRIES_SQL = (
    f"SELECT {ENTRY_COLUMNS} FROM memory_entries WHERE session_id = $1 ORDER BY entry_id"
)
# `position` stands in for SQLite's rowid: the reread list keeps the order it was written in.
_SELECT_REREAD_SQL = "SELECT message_id FROM memory_reread WHERE session_id = $1 ORDER BY position"


async def write_memory(conn: PooledConnection, session_id: int, memory: Memory) -> None:
    """Replace the session's memory; called inside the compaction's transaction."""
    await conn.execute("DELETE FROM memory_entries WHERE session_id = $1", session_id)
    await conn.execute("DELETE FROM memory_reread WHERE session_id = $1", session_id)
    if memory.entries:
        await conn.executemany(
            _INSERT_ENTRY_SQL, [entry_params(session_id, e) for e in memory.entries]
        )
    if memory.reread:
        await conn.executemany(
            "INSERT INTO memory_reread (session_id, message_id) VALUES ($1, $2)"
            " ON CONFLICT DO NOTHING",
            [(session_id, message_id) for message_id in memory.reread],
        )


async def load_memory(db: PostgresDatabase, session_id: int) -> Memory:
    """The session's memory as the last committed compaction left it."""
    entries = await db.fetchall(_SELECT_ENTRIES_SQL, (session_id,))
    reread = await db.fetchall(_SELECT_REREAD_SQL, (session_id,))
    return memory_from_rows(entries, reread)

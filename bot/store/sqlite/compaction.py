"""The SQLite compaction commit (`TranscriptWrites.archive_and_compact`), ONE transaction.

A crash (or an exception) anywhere inside it rolls the whole step back, so the store
only ever holds the state before it or the state after it (SPEC 4).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import aiosqlite

from compactbot.bot.store import rows
from compactbot.bot.store.base import (
    CompactionCommit,
    CompressionEvent,
    NewMessage,
    SessionNotFound,
    SessionRecord,
    StateDelta,
)
from compactbot.bot.store.rows import event_params
from compactbot.bot.store.sqlite.appends import MAX_SEQ_SQL
from compactbot.bot.store.sqlite.commit_edits import refresh_copies, span_live
from compactbot.bot.store.sqlite.database import Database, one
from compactbot.bot.store.sqlite.events import INSERT_EVENT_SQL
from compactbot.bot.store.sqlite.fts import BackgroundIndexer
from compactbot.bot.store.sqlite.memory import write_memory
from compactbot.bot.store.sqlite.sessions import COUNT_ACTIVE_SQL, WRITE_STATE_SQL
from compactbot.compression.memory import Memory
from compactbot.compression.state import CompressorState

log = logging.getLogger(__name__)


class SqliteCompaction:
    """The compaction commit of `SqliteStore`: archive, insert, state, memory and event at once."""

    _db: Database
    _clock: Callable[[], float]
    _fts: BackgroundIndexer

    async def archive_and_compact(
        self,
        session: SessionRecord,
        compacted: Sequence[NewMessage],
        watermark: int | None,
        *,
        state: StateDelta | None = None,
        system_prompt: str | None = None,
        event: CompressionEvent | None = None,
        holder: str | None = None,
        memory: Memory | None = None,
        span_ids: Sequence[int] | None = None,
    ) -> CompactionCommit | None:
        sid = session.id
        now = self._clock()
        async with self._db.transaction() as conn:
            current = await self._may_commit(conn, session, holder, now, span_ids)
            if current is None:
                return None
            archived, inserted_ids = 0, tuple[int, ...]()
            if watermark is not None:
                moved = await _replace_up_to(conn, sid, watermark, compacted, now)
                if moved is None:
                    log.info(
                        "compaction watermark is gone (chat=%s session=%d)", session.chat_key, sid
                    )
                    return None
                archived, inserted_ids = moved
                if current != session.version:
                    await refresh_copies(conn, compacted, inserted_ids)
            tokens, count = await count_active(conn, sid)
            version = current + 1
            await conn.execute(
                "UPDATE sessions SET active_tokens = ?, active_messages = ?, version = ?"
                " WHERE id = ?",
                (tokens, count, version, sid),
            )
            if state is not None:
                current = await one(conn, "SELECT * FROM sessions WHERE id = ?", (sid,))
                await _write_state(conn, sid, state(rows.session_from_row(current).compressor))
            if system_prompt is not None:
                await conn.execute(
                    "UPDATE sessions SET system_prompt = ? WHERE id = ?", (system_prompt, sid)
                )
            if event is not None:
                await conn.execute(INSERT_EVENT_SQL, event_params(event))
            if memory is not None:
                await write_memory(conn, sid, memory)
            if holder is not None:
                await conn.execute(
                    "DELETE FROM compression_locks WHERE session_id = ? AND holder = ?",
                    (sid, holder),
                )
        self._fts.added(len(inserted_ids))
        return CompactionCommit(
            archived=archived,
            inserted=len(inserted_ids),
            active_tokens=tokens,
            active_messages=count,
            version=version,
            inserted_ids=inserted_ids,
        )

    async def _may_commit(
        self,
        conn: aiosqlite.Connection,
        session: SessionRecord,
        holder: str | None,
        now: float,
        span_ids: Sequence[int] | None,
    ) -> int | None:
        """The session's current version when the commit may go ahead; None when fenced out."""
        row = await one(conn, "SELECT version FROM sessions WHERE id = ?", (session.id,))
        if row is None:
            raise SessionNotFound(session.id)
        if row["version"] != session.version and not await span_live(conn, session.id, span_ids):
            log.info(
                "compaction fenced out (chat=%s session=%d expected_version=%d version=%d)",
                session.chat_key,
                session.id,
                session.version,
                row["version"],
            )
            return None
        if holder is not None:
            lock = await one(
                conn,
                "SELECT 1 FROM compression_locks"
                " WHERE session_id = ? AND holder = ? AND expires_at > ?",
                (session.id, holder, now),
            )
            if lock is None:
                log.info("compaction lease lost (chat=%s session=%d)", session.chat_key, session.id)
                return None
        return int(row["version"])


async def _replace_up_to(
    conn: aiosqlite.Connection,
    sid: int,
    watermark: int,
    compacted: Sequence[NewMessage],
    now: float,
) -> tuple[int, tuple[int, ...]] | None:
    """Archive active rows up to `watermark`'s position; the compacted set goes in their place."""
    # The fence is a position in the transcript, not an id: after a compaction the compacted
    # rows have higher ids than the survivors that follow them.
    mark = await one(
        conn,
        "SELECT seq FROM messages WHERE id = ? AND session_id = ? AND active = 1",
        (watermark, sid),
    )
    if mark is None:
        return None
    cur = await conn.execute(
        "UPDATE messages SET active = 0, compacted = 1"
        " WHERE session_id = ? AND active = 1 AND seq <= ?",
        (sid, mark["seq"]),
    )
    archived = cur.rowcount
    # Rows newer than the watermark arrived while the summary was written: renumber them after
    # the compacted set so the transcript reads summary, tail, then the newcomers.
    survivors = await conn.execute_fetchall(
        "SELECT id FROM messages WHERE session_id = ? AND active = 1 ORDER BY seq", (sid,)
    )
    base = await max_seq(conn, sid)
    await conn.executemany(
        rows.INSERT_MESSAGE_SQL,
        [rows.message_params(m, sid, base + i + 1, now) for i, m in enumerate(compacted)],
    )
    after = base + len(compacted)
    inserted = await conn.execute_fetchall(
        "SELECT id FROM messages WHERE session_id = ? AND seq > ? AND seq <= ? ORDER BY seq",
        (sid, base, after),
    )
    await conn.executemany(
        "UPDATE messages SET seq = ? WHERE id = ?",
        [(after + i + 1, r[0]) for i, r in enumerate(survivors)],
    )
    return archived, tuple(r[0] for r in inserted)


async def max_seq(conn: aiosqlite.Connection, session_id: int) -> int:
    row = await one(conn, MAX_SEQ_SQL, (session_id,))
    return int(row[0])


async def count_active(conn: aiosqlite.Connection, session_id: int) -> tuple[int, int]:
    row = await one(conn, COUNT_ACTIVE_SQL, (session_id,))
    return int(row[0]), int(row[1])


async def _write_state(conn: aiosqlite.Connection, session_id: int, state: CompressorState) -> None:
    await conn.execute(WRITE_STATE_SQL, (*rows.state_params(state), session_id))

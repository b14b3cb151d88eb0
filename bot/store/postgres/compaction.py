"""The PostgreSQL compaction commit (`TranscriptWrites.archive_and_compact`), ONE transaction.

Method for method bot/store/sqlite/compaction.py in PostgreSQL's dialect. Every write of a session
takes the session row's lock first (`FOR UPDATE` or an UPDATE of it), so writers of one session
are ordered and each sees the other's committed rows and version.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import (
    CompactionCommit,
    CompressionEvent,
    NewMessage,
    SessionNotFound,
    SessionRecord,
    StateDelta,
)
from compactbot.bot.store.postgres.appends import insert_after_max, max_seq
from compactbot.bot.store.postgres.commit_edits import refresh_copies, span_live
from compactbot.bot.store.postgres.database import PostgresDatabase, affected
from compactbot.bot.store.postgres.events import INSERT_EVENT_SQL
from compactbot.bot.store.postgres.memory import write_memory
from compactbot.bot.store.postgres.sessions import COUNT_ACTIVE_SQL, write_state
from compactbot.bot.store.rows import event_params
from compactbot.compression.memory import Memory

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

log = logging.getLogger(__name__)


class PostgresCompaction:
    """The compaction commit of `PostgresStore`: archive, insert, state, memory, event at once."""

    _db: PostgresDatabase
    _clock: Callable[[], float]

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
            current = await _may_commit(conn, session, holder, now, span_ids)
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
                if current.version != session.version:
                    await refresh_copies(conn, compacted, inserted_ids)
            tokens, count = await count_active(conn, sid)
            version = current.version + 1
            await conn.execute(
                "UPDATE sessions SET active_tokens = $1, active_messages = $2, version = $3"
                " WHERE id = $4",
                tokens,
                count,
                version,
                sid,
            )
            if state is not None:
                # The row is locked since `_may_commit`, so its state is the freshest there is.
                await write_state(conn, sid, state(current.compressor))
            if system_prompt is not None:
                await conn.execute(
                    "UPDATE sessions SET system_prompt = $1 WHERE id = $2", system_prompt, sid
                )
            if event is not None:
                await conn.execute(INSERT_EVENT_SQL, *event_params(event))
            if memory is not None:
                await write_memory(conn, sid, memory)
            if holder is not None:
                await conn.execute(
                    "DELETE FROM compression_locks WHERE session_id = $1 AND holder = $2",
                    sid,
                    holder,
                )
        return CompactionCommit(
            archived=archived,
            inserted=len(inserted_ids),
            active_tokens=tokens,
            active_messages=count,
            version=version,
            inserted_ids=inserted_ids,
        )


async def _may_commit(
    conn: PooledConnection,
    session: SessionRecord,
    holder: str | None,
    now: float,
    span_ids: Sequence[int] | None,
) -> SessionRecord | None:
    """The locked session row when the commit may go ahead; None when it was fenced out."""
    # Compare-and-set: the row lock makes a concurrent commit wait, then see our version.
    row: Any = await conn.fetchrow("SELECT * FROM sessions WHERE id = $1 FOR UPDATE", session.id)
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
        # Locked too, so an acquirer reclaiming the lease after expiry waits for this commit.
        lock = await conn.fetchval(
            "SELECT 1 FROM compression_locks"
            " WHERE session_id = $1 AND holder = $2 AND expires_at > $3 FOR UPDATE",
            session.id,
            holder,
            now,
        )
        if lock is None:
            log.info("compaction lease lost (chat=%s session=%d)", session.chat_key, session.id)
            return None
    return rows.session_from_row(row)


async def _replace_up_to(
    conn: PooledConnection,
    sid: int,
    watermark: int,
    compacted: Sequence[NewMessage],
    now: float,
) -> tuple[int, tuple[int, ...]] | None:
    """Archive active rows up to `watermark`'s position; the compacted set goes in their place."""
    # The fence is a position in the transcript, not an id: after a compaction the compacted
    # rows have higher ids than the survivors that follow them.
    mark = await conn.fetchval(
        "SELECT seq FROM messages WHERE id = $1 AND session_id = $2 AND active", watermark, sid
    )
    if mark is None:
        return None
    archived = affected(
        await conn.execute(
            "UPDATE messages SET active = FALSE, compacted = TRUE"
            " WHERE session_id = $1 AND active AND seq <= $2",
            sid,
            mark,
        )
    )
    # Rows newer than the watermark arrived while the summary was written: renumber them after
    # the compacted set so the transcript reads summary, tail, then the newcomers.
    survivors = await conn.fetch(
        "SELECT id FROM messages WHERE session_id = $1 AND active ORDER BY seq", sid
    )
    inserted = await insert_after_max(conn, sid, compacted, now) if compacted else []
    after = await max_seq(conn, sid)
    await conn.executemany(
        "UPDATE messages SET seq = $1 WHERE id = $2",
        [(after + i + 1, r[0]) for i, r in enumerate(survivors)],
    )
    return archived, tuple(inserted)


async def count_active(conn: PooledConnection, session_id: int) -> tuple[int, int]:
    [row] = await conn.fetch(COUNT_ACTIVE_SQL, session_id)  # an aggregate: always one row
    return int(row[0]), int(row[1])

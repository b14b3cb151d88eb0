"""The SQLite full-text index, filled behind the writer instead of inside every ingest.

Indexing a row (trigrams) costs more than storing it, so the ingest transaction only stores;
this task indexes the rows above the watermark `fts_indexed.upto` in small transactions once
writes pause for a moment (or the backlog grows large). Search reads the index for the rows at
or below the watermark and scans the rows above it, in one statement (one snapshot), so a row
is searchable the moment it is committed, whatever the indexer is doing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from functools import partial

from compactbot.bot.store.sqlite.database import Database
from compactbot.bot.store.sqlite.schema.migrations import indexed_text

log = logging.getLogger(__name__)

# Rows per indexing transaction: a few ms of the writer, so an ingest never waits long behind it.
INDEX_CHUNK_ROWS = 128
# Index when no row was added for this long: between bursts, not inside them.
QUIET_SECONDS = 0.02
# Fewer rows wait for more: a transaction per message would cost the writer more than it saves.
MIN_INDEX_ROWS = 64
# Past this backlog the indexer runs even while rows keep arriving, which bounds the scan
# search makes of the unindexed tail (a few ms).
MAX_UNINDEXED_ROWS = 2_000

_INDEX_ROWS_SQL = (
    f"INSERT INTO messages_fts(rowid, text) SELECT m.id, {indexed_text('m')}"
    " FROM messages m WHERE m.id > ? AND m.id <= ? ORDER BY m.id"
)
_NEXT_CHUNK_SQL = (
    "SELECT max(id), count(*) FROM (SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT ?)"
)


def index_chunk(conn: sqlite3.Connection, limit: int) -> int:
    """Index the next `limit` rows above the watermark and move it past them; how many."""
    (upto,) = conn.execute("SELECT upto FROM fts_indexed").fetchone()
    last, count = conn.execute(_NEXT_CHUNK_SQL, (upto, limit)).fetchone()
    if not count:
        return 0
    conn.execute(_INDEX_ROWS_SQL, (upto, last))
    conn.execute("UPDATE fts_indexed SET upto = ?", (last,))
    return int(count)


class BackgroundIndexer:
    """Owns the indexing task of one writable SQLite store; writers call `added`."""

    def __init__(self, db: Database, *, quiet_seconds: float = QUIET_SECONDS) -> None:
        self._db = db
        self._quiet = quiet_seconds
        self._added = asyncio.Event()
        self._backlog = 0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        # Rows stored by another process, or before a crash, are indexed first.
        self._backlog = MAX_UNINDEXED_ROWS
        self._added.set()
        self._task = asyncio.create_task(self._run(), name="sqlite-fts-indexer")

    def added(self, rows: int) -> None:
        """`rows` new message rows were committed."""
        if rows:
            self._backlog += rows
            self._added.set()

    async def index_pending(self) -> int:
        """Index every row above the watermark now; how many (tests, `store copy`)."""
        total = 0
        while True:
            count = await self._db.run_in_writer(partial(index_chunk, limit=INDEX_CHUNK_ROWS))
            total += count
            self._backlog = max(0, self._backlog - count)
            if count < INDEX_CHUNK_ROWS:
                # Nothing committed since that chunk's snapshot (writes share one lock).
                self._backlog = 0
                return total

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            await self._added.wait()
            self._added.clear()
            if self._backlog < MAX_UNINDEXED_ROWS:
                await asyncio.sleep(self._quiet)
                if self._added.is_set() or self._backlog < MIN_INDEX_ROWS:
                    continue  # still busy, or too few rows to be worth a transaction yet
            try:
                await self.index_pending()
            except Exception:
                # The rows stay searchable by the scan; the next write tries again.
                log.exception("full-text indexing failed; will retry")

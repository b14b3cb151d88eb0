"""The PostgreSQL `TranscriptWrites` besides the compaction commit (compaction.py): ingest and
appends, each one transaction (its steps are in bot/store/postgres/appends.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from compactbot.bot.store.base import IngestItem, IngestResult, NewMessage, TurnFence
from compactbot.bot.store.postgres.appends import Appending, append_rows, open_appending
from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.postgres.dedup import mark_processed, prune_processed
from compactbot.bot.store.postgres.queue.queue_sql import NOTIFY_SQL, check_turn_fence, enqueue_turn

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection


UPSERT_CHAT_SQL = (
    "INSERT INTO chats(key, platform, title, parent_key, is_group, created_at)"
    " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT(key) DO UPDATE SET"
    " title = coalesce(excluded.title, chats.title),"
    " parent_key = coalesce(excluded.parent_key, chats.parent_key),"
    " is_group = excluded.is_group"
)


class PostgresIngest:
    """The ingest and append methods of `PostgresStore`."""

    _db: PostgresDatabase
    _clock: Callable[[], float]
    _last_prune: float = 0.0

    async def ingest(self, items: Sequence[IngestItem]) -> list[IngestResult]:
        if not items:
            return []
        now = self._clock()
        results, self._last_prune = await self._db.retried(
            lambda conn: self._ingest(conn, items, now)
        )
        return results

    async def _ingest(
        self, conn: PooledConnection, items: Sequence[IngestItem], now: float
    ) -> tuple[list[IngestResult], float]:
        """The results, and the last-prune time once this attempt commits."""
        results: list[IngestResult] = []
        # Per session of the batch: its row, its next seq, what the batch added.
        open_sessions: dict[tuple[str, str | None], Appending] = {}
        enqueued = False
        for item in items:
            if item.update_id is not None and not await mark_processed(
                conn, item.platform, item.update_id, now
            ):
                results.append(IngestResult(duplicate=True))
                continue
            if item.upsert_chat:
                await conn.execute(
                    UPSERT_CHAT_SQL,
                    item.chat_key,
                    item.platform,
                    item.title,
                    item.parent_key,
                    item.is_group,
                    now,
                )
            appending = await open_appending(conn, item, now, open_sessions)
            result = await appending.add(conn, item.message, now)
            if item.enqueue is not None and result.message_id is not None:
                await enqueue_turn(conn, item, result, now)
                enqueued = True
            results.append(result)
        for appending in open_sessions.values():
            await appending.flush(conn, now)
        if enqueued:
            await conn.execute(NOTIFY_SQL)
        return results, await prune_processed(conn, now, self._last_prune)

    async def append_messages(
        self,
        session_id: int,
        messages: Sequence[NewMessage],
        *,
        fence: TurnFence | None = None,
    ) -> list[int]:
        if fence is None:
            return (await self.append_batch([(session_id, messages)]))[0]
        now = self._clock()
        async with self._db.transaction() as conn:
            await check_turn_fence(conn, fence)
            return await append_rows(conn, session_id, messages, now)

    async def append_batch(
        self, items: Sequence[tuple[int, Sequence[NewMessage]]]
    ) -> list[list[int]]:
        """`append_messages` for several sessions in one transaction (all or nothing)."""
        now = self._clock()

        async def append_all(conn: PooledConnection) -> list[list[int]]:
            return [await append_rows(conn, sid, messages, now) for sid, messages in items]

        return await self._db.retried(append_all)

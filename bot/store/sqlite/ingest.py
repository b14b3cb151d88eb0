"""The SQLite `TranscriptWrites` besides the compaction commit (compaction.py): ingest and
appends, each one transaction run whole on the writer thread (bot/store/sqlite/appends.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

from compactbot.bot.store.base import IngestItem, IngestResult, NewMessage, TurnFence
from compactbot.bot.store.sqlite import appends as sqlite_appends
from compactbot.bot.store.sqlite.appends import ingest_batch
from compactbot.bot.store.sqlite.database import Database
from compactbot.bot.store.sqlite.fts import BackgroundIndexer


class SqliteIngest:
    """The ingest and append methods of `SqliteStore`."""

    _db: Database
    _clock: Callable[[], float]
    _last_prune: float = 0.0
    _fts: BackgroundIndexer

    async def ingest(self, items: Sequence[IngestItem]) -> list[IngestResult]:
        if not items:
            return []
        now = self._clock()
        results, pruned = await self._db.run_in_writer(
            partial(ingest_batch, items=items, now=now, last_prune=self._last_prune)
        )
        # Only once committed: a rolled-back prune must be tried again.
        self._last_prune = pruned
        self._fts.added(sum(1 for r in results if r.message_id is not None))
        return results

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


def refuse_fence(fence: TurnFence | None) -> None:
    """Durable turns (and so their fences) exist only on PostgreSQL (SPEC 15)."""
    if fence is not None:
        raise ValueError("durable turns need the PostgreSQL store")

"""Group commit: writes from many chats that arrive together share one transaction.

One SQLite writer commits a transaction in about the time it takes to commit a hundred rows,
so while one batch commits, the calls that arrive queue up and go in the next batch. A caller
is answered only after the batch holding its item committed; nothing waits when the store is
idle (the first call of a quiet moment is written at once, after at most `window_seconds`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from compactbot.bot.store.base import IngestItem, IngestResult, NewMessage
from compactbot.bot.store.protocols.transcript_store import TranscriptWrites

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

# A batch this large commits in a few ms on SQLite; beyond it the transaction holds the writer
# long enough to delay other writes (compaction commits, settings) noticeably.
MAX_BATCH_ITEMS = 512
# How long the first call of a batch waits for company: 0 is one turn of the event loop,
# which already gathers everything submitted by tasks that ran in the same iteration.
WINDOW_SECONDS = 0.0


class BatcherClosed(RuntimeError):
    """The batcher was closed; the item was not written."""


@dataclass(slots=True)
class _Pending(Generic[T, R]):
    item: T
    done: asyncio.Future[R]


class WriteBatcher(Generic[T, R]):
    """Runs `write(items)` (one transaction, all or nothing) for the items submitted together.

    `write` returns one result per item, in order. When a batch of several items fails, each
    item is retried alone, so one bad item fails only its own caller.
    """

    def __init__(
        self,
        write: Callable[[Sequence[T]], Awaitable[Sequence[R]]],
        *,
        max_items: int = MAX_BATCH_ITEMS,
        window_seconds: float = WINDOW_SECONDS,
    ) -> None:
        if max_items < 1 or window_seconds < 0:
            raise ValueError(f"bad batch bounds: max_items={max_items}, window={window_seconds}")
        self._write = write
        self._max_items = max_items
        self._window = window_seconds
        self._queue: list[_Pending[T, R]] = []
        self._flusher: asyncio.Task[None] | None = None
        self._closed = False
        self.batches = 0  # transactions run, for the benchmark and tests

    async def submit(self, item: T) -> R:
        """Write `item` with whatever else arrives meanwhile; returns after the commit."""
        if self._closed:
            raise BatcherClosed("write batcher is closed")
        done: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._queue.append(_Pending(item, done))
        if self._flusher is None:
            self._flusher = asyncio.create_task(self._flush())
        # A cancelled caller cancels only its own future: the item is already queued and may
        # still be committed, exactly as if it had been cancelled just after that commit.
        return await done

    async def close(self) -> None:
        """Refuse new items and wait until the queued ones are written."""
        self._closed = True
        if self._flusher is not None:
            await asyncio.shield(self._flusher)

    async def _flush(self) -> None:
        try:
            if self._window:
                await asyncio.sleep(self._window)
            else:
                await asyncio.sleep(0)
            while self._queue:
                batch = self._queue[: self._max_items]
                del self._queue[: len(batch)]
                await self._run(batch)
        finally:
            self._flusher = None

    async def _run(self, batch: list[_Pending[T, R]]) -> None:
        self.batches += 1
        try:
            results = await self._write([p.item for p in batch])
            if len(results) != len(batch):
                raise RuntimeError(f"write returned {len(results)} results for {len(batch)}")
        except Exception as exc:
            if len(batch) == 1:
                if not batch[0].done.done():
                    batch[0].done.set_exception(exc)
                return
            log.warning(
                "batched write of %d items failed (%s); retrying singly",
                len(batch),
                type(exc).__name__,
            )
            for pending in batch:
                await self._run([pending])
            return
        except BaseException:  # cancelled mid-write: nobody may think it committed
            for pending in batch:
                pending.done.cancel()
            raise
        for pending, result in zip(batch, results, strict=True):
            if not pending.done.done():
                pending.done.set_result(result)


class BatchedAppends:
    """`append_messages` with group commit: concurrent appends share one transaction."""

    def __init__(self, store: TranscriptWrites, *, window_seconds: float = WINDOW_SECONDS) -> None:
        self._batcher: WriteBatcher[tuple[int, Sequence[NewMessage]], list[int]] = WriteBatcher(
            store.append_batch, window_seconds=window_seconds
        )

    @property
    def batches(self) -> int:
        return self._batcher.batches

    async def append_messages(self, session_id: int, messages: Sequence[NewMessage]) -> list[int]:
        """The new rows' ids, once the transaction holding them committed."""
        return await self._batcher.submit((session_id, messages))

    async def close(self) -> None:
        await self._batcher.close()


class BatchedIngest:
    """`TranscriptWrites.ingest` with group commit: runs of several chats share one transaction."""

    def __init__(self, store: TranscriptWrites, *, window_seconds: float = WINDOW_SECONDS) -> None:
        self._store = store
        self._batcher: WriteBatcher[Sequence[IngestItem], list[IngestResult]] = WriteBatcher(
            self._ingest_runs, window_seconds=window_seconds
        )

    async def ingest(self, items: Sequence[IngestItem]) -> list[IngestResult]:
        """One result per item, once the transaction holding them committed."""
        return await self._batcher.submit(items)

    async def close(self) -> None:
        await self._batcher.close()

    async def _ingest_runs(self, runs: Sequence[Sequence[IngestItem]]) -> list[list[IngestResult]]:
        results = await self._store.ingest([item for run in runs for item in run])
        out, start = [], 0
        for run in runs:
            out.append(results[start : start + len(run)])
            start += len(run)
        return out

"""Per-chat lanes: one chat's work runs strictly in order, different chats run concurrently."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[None]]


def lane_key(chat_key: str, scope_user: str | None) -> str:
    """A session's lane: the chat's, or one member's own where memory is per member."""
    return f"{chat_key}|{scope_user or ''}"


@dataclass(slots=True)
class _Lane:
    # Each job with the (monotonic) time it was queued, for the oldest-wait metric and /readyz.
    queue: deque[tuple[float, Job]] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None


class LaneScheduler:
    """Runs jobs keyed by lane; a lane's worker exits (and its memory is freed) once idle."""

    def __init__(
        self, max_concurrent: int = 32, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if max_concurrent < 1:
            raise ValueError(f"max_concurrent must be >= 1, got {max_concurrent}")
        self._clock = clock
        self._slots = asyncio.Semaphore(max_concurrent)
        self._lanes: dict[str, _Lane] = {}
        self._closed = False

    @property
    def active_lanes(self) -> int:
        return len(self._lanes)

    @property
    def queued_jobs(self) -> int:
        """Jobs waiting for their turn (a lane's running job is not counted)."""
        return sum(len(lane.queue) for lane in self._lanes.values())

    def oldest_wait_seconds(self) -> float:
        """How long the longest-waiting queued job has waited; 0 when nothing waits."""
        heads = [lane.queue[0][0] for lane in self._lanes.values() if lane.queue]
        return max(0.0, self._clock() - min(heads)) if heads else 0.0

    def submit(self, key: str, job: Job) -> None:
        """Queue `job` behind every earlier job of the same lane."""
        if self._closed:
            raise RuntimeError("lane scheduler is closed")
        lane = self._lanes.get(key)
        if lane is None:
            lane = self._lanes[key] = _Lane()
        lane.queue.append((self._clock(), job))
        if lane.worker is None:
            lane.worker = asyncio.create_task(self._drain(key, lane), name=f"lane:{key}")

    async def _drain(self, key: str, lane: _Lane) -> None:
        try:
            while lane.queue:
                async with self._slots:
                    # Taken only once it can run: a job waiting for a slot still counts as queued.
                    _, job = lane.queue.popleft()
                    try:
                        await job()
                    except asyncio.CancelledError:
                        raise
                    except Exception:
                        # One failing job must not stall the chat's later messages.
                        log.exception("lane job failed (lane=%s)", key)
        finally:
            # Released only when empty: submit() after this point starts a fresh worker.
            if not lane.queue or self._closed:
                self._lanes.pop(key, None)
            else:
                lane.worker = asyncio.create_task(self._drain(key, lane), name=f"lane:{key}")

    async def join(self) -> None:
        """Wait until every lane is idle."""
        while self._lanes:
            workers = [lane.worker for lane in self._lanes.values() if lane.worker]
            if workers:
                await asyncio.gather(*workers, return_exceptions=True)
            else:
                await asyncio.sleep(0)

    async def close(self, *, grace_seconds: float = 10.0) -> None:
        """Stop taking work, let running jobs finish for `grace_seconds`, then cancel the rest."""
        self._closed = True
        try:
            await asyncio.wait_for(self.join(), grace_seconds)
        except TimeoutError:
            for lane in list(self._lanes.values()):
                if lane.worker:
                    lane.worker.cancel()
            await asyncio.gather(
                *(lane.worker for lane in self._lanes.values() if lane.worker),
                return_exceptions=True,
            )
            self._lanes.clear()

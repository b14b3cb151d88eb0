"""The longest event-loop stall: a task that asks to wake every millisecond on the same loop and
records the longest gap between its wake-ups (every other chat waits at least that long), and
the longest pause of Python's garbage collector meanwhile (in any thread, it holds the loop)."""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

TICK_SECONDS = 0.001
T = TypeVar("T")


class LoopTicker:
    """Start it, run the work, stop it: `longest` is the longest gap seen meanwhile."""

    def __init__(self) -> None:
        self.longest = 0.0
        self.longest_gc = 0.0
        self._gc_began: float | None = None
        self._running = False
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._running = True
        gc.callbacks.append(self._collection)
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0)  # the ticker runs before the work starts

    async def stop(self) -> float:
        self._running = False
        if self._task is not None:
            await self._task
        if self._collection in gc.callbacks:
            gc.callbacks.remove(self._collection)
        return self.longest

    def _collection(self, phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._gc_began = now
        elif self._gc_began is not None:
            self.longest_gc = max(self.longest_gc, now - self._gc_began)
            self._gc_began = None

    async def _tick(self) -> None:
        last = time.perf_counter()
        while self._running:
            await asyncio.sleep(TICK_SECONDS)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now


async def with_ticker(call: Callable[[], Awaitable[T]]) -> tuple[T, float, float]:
    """(result, seconds, longest stall) of one awaited call."""
    ticker = LoopTicker()
    await ticker.start()
    begin = time.perf_counter()
    result: Any = await call()
    seconds = time.perf_counter() - begin
    return result, seconds, await ticker.stop()

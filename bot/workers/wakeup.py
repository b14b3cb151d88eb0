"""Wake-ups for workers: LISTEN on a dedicated connection, with a short poll as the fallback.

A notification only says "look now"; the queue itself is the truth, so a lost notification
(or a connection that dropped) costs at most one poll interval, never a job.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg

from compactbot.bot.store.postgres.database import redacted_dsn

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
RECONNECT_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 5.0
_DB_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)


class WorkWakeup:
    """Sets every registered event on each notification of `channel` (and every poll)."""

    def __init__(self, dsn: str, channel: str, *, poll_seconds: float = POLL_SECONDS) -> None:
        self._dsn = dsn
        self._channel = channel
        self._poll_seconds = poll_seconds
        self._events: list[asyncio.Event] = []
        self._task: asyncio.Task[None] | None = None

    def event(self) -> asyncio.Event:
        """A new event this wake-up sets; its owner clears it before looking."""
        event = asyncio.Event()
        self._events.append(event)
        return event

    def wake(self, *_args: Any) -> None:
        for event in self._events:
            event.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="work-wakeup")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _run(self) -> None:
        while True:
            try:
                await self._listen()
            except _DB_ERRORS as err:
                log.warning(
                    "work notifications lost (db=%s): %s; polling until reconnected",
                    redacted_dsn(self._dsn),
                    type(err).__name__,
                )
            await self._poll_for(RECONNECT_SECONDS)

    async def _listen(self) -> None:
        conn = await asyncpg.connect(self._dsn, timeout=CONNECT_TIMEOUT_SECONDS)
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        try:
            await conn.add_listener(self._channel, self.wake)
            self.wake()  # anything enqueued while we were not listening
            while not lost.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(lost.wait(), self._poll_seconds)
                self.wake()
        finally:
            conn.terminate()

    async def _poll_for(self, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        until = loop.time() + seconds
        while loop.time() < until:
            self.wake()
            await asyncio.sleep(self._poll_seconds)

"""The "typing…" indicator a chat sees while its question waits for and gets its answer."""

from __future__ import annotations

import asyncio
import logging

from compactbot.bot.events import Adapter, ReplyTarget

log = logging.getLogger(__name__)


class TypingIndicators:
    """Each indicator is a task held until its event is set; `close` cancels the rest."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, adapter: Adapter, target: ReplyTarget) -> asyncio.Event:
        """Show "typing…" in the target's chat until the returned event is set."""
        done = asyncio.Event()

        async def hold() -> None:
            try:
                async with adapter.typing(target):
                    await done.wait()
            except Exception:
                log.debug("typing indicator failed (chat=%s)", target.chat_key)

        task = asyncio.create_task(hold())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return done

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

"""Flood-safe pacing of a streamed reply: coalesced preview frames, then the final text.

A platform supplies a `StreamSurface` (how to show a preview frame, how to deliver the final
text); `PacedStream` decides when. At most one frame per `interval_seconds`, measured from the
end of the previous frame, newer text replaces older text that was never shown, and a flood wait
(`retry_after`) pushes the next frame and the final delivery back by what the platform asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from compactbot.bot.events import DeliveryError, ReplyTarget

log = logging.getLogger(__name__)

# About one edit a second per chat keeps Telegram and Discord flood control quiet (peers.md).
DEFAULT_INTERVAL_SECONDS = 1.0
# A frame never waits longer than this for a flood wait; past it previews stop for this reply.
MAX_FLOOD_WAIT_SECONDS = 60.0

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class FloodWait(Exception):
    """The platform asked us to wait `seconds` before the next frame."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"retry after {seconds:.1f}s")
        self.seconds = seconds


class PreviewFailed(Exception):
    """A preview frame cannot be shown; previews stop, the final text still goes out."""


class StreamSurface(Protocol):
    """One reply's place on a platform: preview frames, then the final delivery."""

    async def show(self, text: str) -> None:
        """Show `text` (the answer so far) as a preview; FloodWait or PreviewFailed."""
        ...

    async def finish(self, text: str) -> None:
        """Deliver the final text, rendered and split, replacing the preview; DeliveryError."""
        ...


@runtime_checkable
class StreamingAdapter(Protocol):
    """An adapter that can stream; the gateway asks it for a stream per reply."""

    def open_stream(self, target: ReplyTarget, *, is_group: bool) -> ReplyStream | None:
        """A stream for this reply, or None where streaming does not apply (slash commands)."""
        ...


class ReplyStream(Protocol):
    """One streamed reply: the text so far, then the final text (or nothing, if abandoned)."""

    async def update(self, text: str) -> None: ...
    async def finish(self, text: str) -> None: ...
    async def abandon(self) -> None: ...


class PacedStream:
    """The `ReplyStream` every adapter uses: pacing here, platform calls in the surface."""

    def __init__(
        self,
        surface: StreamSurface,
        *,
        interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._surface = surface
        self._interval = interval_seconds
        self._clock = clock
        self._sleep = sleep
        self._latest = ""
        self._shown = ""
        # The first frame waits one interval too: an answer written faster than that arrives as
        # one ordinary message, with no preview flickering before it.
        self._next_at = clock() + interval_seconds
        self._flood_until = 0.0
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._showing = False
        self._previews_on = True
        self.frames = 0

    async def update(self, text: str) -> None:
        """The answer so far; returns at once, a frame follows when the pace allows."""
        self._latest = text
        if not self._previews_on:
            return
        self._dirty.set()
        if self._task is None:
            self._task = asyncio.create_task(self._frames(), name="reply-stream")

    async def finish(self, text: str) -> None:
        """Stop previews, wait out the pace (and any flood wait), deliver `text` in full."""
        await self._stop_frames()
        # Once a frame is up, the final edit keeps the pace too; a fast answer does not wait.
        until = max(self._next_at if self.frames else 0.0, self._flood_until)
        wait = min(until - self._clock(), MAX_FLOOD_WAIT_SECONDS)
        if wait > 0:
            await self._sleep(wait)
        await self._surface.finish(text)

    async def abandon(self) -> None:
        """No final text will come (the turn failed); stop previews."""
        await self._stop_frames()

    async def _stop_frames(self) -> None:
        self._previews_on = False
        task, self._task = self._task, None
        if task is None:
            return
        if not self._showing:
            task.cancel()
        # A frame in flight finishes: cancelling a send mid-request could post it twice.
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _frames(self) -> None:
        while self._previews_on:
            await self._dirty.wait()
            wait = self._next_at - self._clock()
            if wait > 0:
                await self._sleep(wait)
            self._dirty.clear()
            text = self._latest
            if text == self._shown or not text.strip():
                continue
            self._showing = True
            try:
                await self._surface.show(text)
            except FloodWait as flood:
                if flood.seconds > MAX_FLOOD_WAIT_SECONDS:
                    log.warning("stream: flood wait %.0fs; previews stop", flood.seconds)
                    self._previews_on = False
                self._next_at = self._flood_until = self._clock() + flood.seconds
                self._dirty.set()
                continue
            except PreviewFailed as exc:
                log.info("stream: previews stop: %s", exc)
                self._previews_on = False
                return
            finally:
                self._showing = False
            self.frames += 1
            self._shown = text
            self._next_at = self._clock() + self._interval


def open_stream(adapter: object, target: ReplyTarget, *, is_group: bool) -> ReplyStream | None:
    """The adapter's stream for this reply, when it streams at all."""
    if not isinstance(adapter, StreamingAdapter):
        return None
    return adapter.open_stream(target, is_group=is_group)


async def finish_stream(stream: ReplyStream, text: str, chat_key: str) -> bool:
    """Deliver the final text; False (and logged) when it could not be: the reply is already
    in the transcript."""
    try:
        await stream.finish(text)
    except DeliveryError:
        log.error("streamed reply could not be delivered (chat=%s)", chat_key)
        return False
    return True

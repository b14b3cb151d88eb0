"""A group chat in the terminal: `name: text` in, `bot: …` out, scriptable from a pipe."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from typing import TextIO

from compactbot.bot.events import InboundMessage, ReplyTarget
from compactbot.bot.ingress.gateway import Gateway

PLATFORM = "console"
DEFAULT_SPEAKER = "you"
BOT_HANDLE = "@bot"
_SPEAKER = re.compile(r"^([A-Za-z0-9_.\-]{1,32}):\s?(.*)$", re.DOTALL)


class ConsoleAdapter:
    """One local room. Names given with --admin are the room's admins."""

    platform = PLATFORM

    def __init__(
        self,
        room: str,
        *,
        admins: Iterable[str] = (),
        out: TextIO | None = None,
        activation_always: bool = False,
    ) -> None:
        self.room = room
        self.admins = frozenset(name.lower() for name in admins)
        self._out = out or sys.stdout
        self._speaker = DEFAULT_SPEAKER
        self._counter = 0
        self._activation_always = activation_always

    async def send(self, target: ReplyTarget, text: str) -> None:
        for line in text.splitlines() or [""]:
            self._out.write(f"bot: {line}\n")
        self._out.flush()

    async def is_admin(self, message: InboundMessage) -> bool:
        return message.author_name.lower() in self.admins

    def typing(self, target: ReplyTarget) -> contextlib.AbstractAsyncContextManager[None]:
        return contextlib.nullcontext()

    def parse_line(self, line: str) -> InboundMessage | None:
        """`alice: hi @bot` is alice speaking; a bare line comes from the last speaker."""
        line = line.rstrip("\n")
        if not line.strip():
            return None
        match = _SPEAKER.match(line)
        if match:
            self._speaker, text = match.group(1), match.group(2)
        else:
            text = line
        self._counter += 1
        addressed = (
            self._activation_always or BOT_HANDLE in text.lower() or text.lstrip().startswith("/")
        )
        return InboundMessage(
            platform=PLATFORM,
            chat_id=self.room,
            author_id=self._speaker.lower(),
            author_name=self._speaker,
            text=text,
            addressed=addressed,
            is_group=True,
            platform_message_id=str(self._counter),
            chat_title=f"console room {self.room}",
            is_admin=self._speaker.lower() in self.admins,
        )


async def read_lines(stream: TextIO) -> AsyncIterator[str]:
    """Lines of `stream` without blocking the event loop; ends at end of file.

    A daemon thread does the blocking reads, so a shutdown signal never waits for a line.
    """
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[str | None] = asyncio.Queue()
    if isinstance(stream, io.TextIOWrapper):
        # One invalid UTF-8 byte must cost one character (U+FFFD), not the rest of the input.
        stream.reconfigure(errors="replace")

    def pump() -> None:
        try:
            for line in iter(stream.readline, ""):
                loop.call_soon_threadsafe(lines.put_nowait, line)
        except (OSError, ValueError):
            pass  # the stream was closed under us: treat it as end of file
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=pump, name="console-stdin", daemon=True).start()
    while (line := await lines.get()) is not None:
        yield line


async def run_console(
    adapter: ConsoleAdapter,
    handle: Callable[[InboundMessage, ConsoleAdapter], object],
    settle: Callable[[], object],
    stream: TextIO | None = None,
) -> None:
    """Feed each line to the gateway and wait for its replies before reading the next one."""
    async for line in read_lines(stream or sys.stdin):
        message = adapter.parse_line(line)
        if message is None:
            continue
        result = handle(message, adapter)
        if asyncio.iscoroutine(result):
            await result
        settled = settle()
        if asyncio.iscoroutine(settled):
            await settled


async def serve_console(
    gateway: Gateway, room: str, admins: Iterable[str], stream: TextIO | None = None
) -> None:
    """The `compactbot.console` entry point: one room on stdin (or `stream`) until EOF."""
    adapter = ConsoleAdapter(room, admins=admins)
    await run_console(adapter, gateway.handle, gateway.join, stream)

"""Long-running modes: `run` (every configured platform) and `console` (a local room)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Iterable
from typing import Protocol, TextIO

from adapters.console import ConsoleAdapter, run_console
from bot.app import App, database_path
from bot.config import Config
from bot.events import ReplyTarget, target_for
from bot.offline_model import OfflineModel

log = logging.getLogger(__name__)

# In `make run` the person at the keyboard owns the room, so they may use admin commands.
CONSOLE_OWNER = "you"


class Platform(Protocol):
    """A platform connection with a lifecycle (Telegram, Discord)."""

    name: str

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def send(self, target: ReplyTarget, text: str) -> None: ...
    @property
    def connected(self) -> bool: ...


def _platforms(config: Config, app: App) -> list[Platform]:
    platforms: list[Platform] = []
    if config.telegram.token is not None:
        from adapters.telegram import TelegramPlatform

        platforms.append(TelegramPlatform(config, app.gateway))
    if config.discord.token is not None:
        from adapters.discord import DiscordPlatform

        platforms.append(DiscordPlatform(config, app.gateway))
    return platforms


async def run(config: Config) -> int:
    """Serve every platform with a token until SIGINT/SIGTERM; the console room when none."""
    async with App(config) as app:
        await app.start_operator_endpoint()
        platforms = _platforms(config, app)
        if not platforms:
            return await _console(app, room="main", admins=[CONSOLE_OWNER])
        from scheduler.overnight import OvernightScheduler

        by_platform = {p.name: p for p in platforms}

        async def notify(chat_key: str, text: str) -> None:
            platform = by_platform.get(chat_key.split(":", 1)[0])
            if platform is not None:
                await platform.send(target_for(chat_key), text)

        scheduler = OvernightScheduler(app.services, app.gateway, notify=notify)
        stop = _stop_event()
        started: list[Platform] = []
        try:
            await scheduler.start()
            for platform in platforms:
                await platform.start()
                started.append(platform)
                app.readiness.watch_platform(platform)
            log.info("serving: %s", ", ".join(p.name for p in started))
            await stop.wait()
            log.info("shutting down")
        finally:
            for platform in reversed(started):
                with contextlib.suppress(Exception):
                    await platform.stop()
            await scheduler.stop()
    return 0


async def console(config: Config, *, room: str, admins: Iterable[str], offline: bool) -> int:
    async with App(config, llm=OfflineModel() if offline else None) as app:
        return await _console(app, room=room, admins=admins)


async def _console(
    app: App, *, room: str, admins: Iterable[str], stream: TextIO | None = None
) -> int:
    adapter = ConsoleAdapter(room, admins=admins)
    _banner(app, room, adapter.admins)
    reader = asyncio.create_task(
        run_console(adapter, app.gateway.handle, app.gateway.lanes.join, stream)
    )
    stop = _stop_event()
    stopper = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
    for task in (reader, stopper):
        if task not in done:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
    if reader in done:
        reader.result()
    await app.gateway.lanes.join()
    return 0


def _banner(app: App, room: str, admins: Iterable[str]) -> None:
    config = app.config
    model = app.model
    compression = config.compression
    kind = "offline (built-in, deterministic summaries)" if model.offline else "endpoint"
    lines = [
        f"compactbot console — room '{room}' (chat console:{room})",
        f"store: {database_path(config)}",
        f"model: {model.name} [{kind}], "
        f"window {model.context_length:,} tokens ({model.context_source})",
        f"compaction at {compression.threshold:.0%}, hygiene at {compression.hygiene_threshold:.0%}"
        f" or {compression.hygiene_hard_message_limit} messages",
        f"admins: {', '.join(sorted(admins)) or 'none'}",
        "Type 'name: message'. Mention @bot for an answer, /help for commands, Ctrl-D to quit.",
    ]
    for line in lines:
        print(line, file=sys.stderr)


def _stop_event() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    return stop

"""Long-running modes: `run` (every configured platform) and `console` (a local room)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

from compactbot.bot import plugins
from compactbot.bot.app import App, database_path
from compactbot.bot.events import target_for
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.operators.doctor import doctor_for
from compactbot.bot.plugins import BackgroundJob, Platform
from compactbot.bot.settings.config import Config

log = logging.getLogger(__name__)

# In `make run` the person at the keyboard owns the room, so they may use admin commands.
CONSOLE_OWNER = "you"


async def run(config: Config) -> int:
    """Serve every platform with a token until SIGINT/SIGTERM; the console room when none."""
    async with App(config) as app:
        await app.start_operator_endpoint(doctor=doctor_for(config))
        platforms = plugins.configured_platforms(config, app.gateway)
        if not platforms:
            return await _console(app, room="main", admins=[CONSOLE_OWNER])
        return await serve(app, platforms)


async def serve(
    app: App,
    platforms: Sequence[Platform],
    background: Sequence[BackgroundJob] = (),
    *,
    scheduled: bool = True,
) -> int:
    """Start the scheduled jobs (unless not `scheduled`), `platforms` and `background`; stop
    them all on SIGINT/SIGTERM."""
    by_platform = {p.name: p for p in platforms}

    async def notify(chat_key: str, text: str) -> None:
        platform = by_platform.get(chat_key.split(":", 1)[0])
        if platform is not None:
            await platform.send(target_for(chat_key), text)

    jobs: list[BackgroundJob] = [
        job.schedule(app.services, app.gateway, notify) for job in plugins.jobs() if scheduled
    ]
    stop = _stop_event()
    started: list[Platform] = []
    running: list[BackgroundJob] = []
    try:
        for job in jobs:
            await job.start()
        for platform in platforms:
            await platform.start()
            started.append(platform)
            app.readiness.watch_platform(platform)
        for extra in background:
            await extra.start()
            running.append(extra)
        log.info("serving: %s", ", ".join(p.name for p in started))
        await stop.wait()
        log.info("shutting down")
    finally:
        for extra in reversed(running):
            with contextlib.suppress(Exception):
                await extra.stop()
        for platform in reversed(started):
            with contextlib.suppress(Exception):
                await platform.stop()
        for job in jobs:
            await job.stop()
    return 0


async def console(config: Config, *, room: str, admins: Iterable[str], offline: bool) -> int:
    async with App(config, llm=OfflineModel() if offline else None) as app:
        return await _console(app, room=room, admins=admins)


async def _console(
    app: App, *, room: str, admins: Iterable[str], stream: TextIO | None = None
) -> int:
    admins = sorted(name.lower() for name in admins)
    _banner(app, room, admins)
    reader = asyncio.create_task(plugins.console_runner()(app.gateway, room, admins, stream))
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
    await app.gateway.join()
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

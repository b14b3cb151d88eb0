"""Platforms, the console and background jobs, found through entry points (SPEC 1).

`bot/` never imports `adapters/` or `scheduler/`: they register here in pyproject.toml, the same
way context engines do, so a third-party platform installs like one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal, Protocol, TextIO

from compactbot.bot.compaction.report import CompactionReport
from compactbot.bot.events import ReplyTarget
from compactbot.bot.ingress.gateway import Gateway
from compactbot.bot.services import Services
from compactbot.bot.settings.config import Config

if TYPE_CHECKING:
    from compactbot.bot.settings.chat_settings import ChatSettings

log = logging.getLogger(__name__)

PLATFORMS_GROUP = "compactbot.platforms"
CONSOLE_GROUP = "compactbot.console"
JOBS_GROUP = "compactbot.jobs"

Notifier = Callable[[str, str], Awaitable[None]]  # (chat key, one line for the chat)


class PluginMissing(Exception):
    """An entry point the service needs is not installed (reinstall the package)."""


class Platform(Protocol):
    """A platform connection with a lifecycle (Telegram, Discord)."""

    name: str

    async def start(self) -> None: ...
    async def stop(self) -> None: ...
    async def send(self, target: ReplyTarget, text: str) -> None: ...
    @property
    def connected(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class Role:
    """The part a process plays (SPEC 15): `run` does everything; `worker` answers turns and
    receives Discord on its shards; `ingress` serves the Telegram webhook."""

    name: Literal["run", "worker", "ingress"] = "run"
    shard_ids: tuple[int, ...] | None = None
    shard_count: int | None = None


RUN = Role()

# Builds the platform when the config has what it needs (its token), else None. Factories are
# called with `role=` only for the worker and ingress roles.
PlatformFactory = Callable[..., Platform | None]
ConsoleRunner = Callable[[Gateway, str, Iterable[str], TextIO | None], Coroutine[Any, Any, None]]


class BackgroundJob(Protocol):
    async def start(self) -> None: ...
    async def stop(self) -> None: ...


class JobPlugin(Protocol):
    """A scheduled job (the overnight compaction), runnable on demand from the operator CLI."""

    name: str

    def schedule(self, services: Services, gateway: Gateway, notify: Notifier) -> BackgroundJob: ...
    async def run_now(
        self, services: Services, *, ignore_window: bool
    ) -> list[tuple[str, CompactionReport]]: ...
    def next_run_text(self, settings: ChatSettings, config: Config) -> str: ...


def _load(group: str) -> list[tuple[str, Any]]:
    return [(ep.name, ep.load()) for ep in sorted(entry_points(group=group), key=lambda e: e.name)]


def configured_platforms(config: Config, gateway: Gateway, role: Role = RUN) -> list[Platform]:
    platforms = []
    for name, factory in _load(PLATFORMS_GROUP):
        platform = factory(config, gateway) if role == RUN else factory(config, gateway, role=role)
        if platform is not None:
            log.debug("platform %s configured", name)
            platforms.append(platform)
    return platforms


def console_runner() -> ConsoleRunner:
    found = _load(CONSOLE_GROUP)
    if not found:
        raise PluginMissing(f"no {CONSOLE_GROUP} entry point; reinstall compactbot")
    runner: ConsoleRunner = found[0][1]
    return runner


def jobs() -> list[JobPlugin]:
    return [plugin for _name, plugin in _load(JOBS_GROUP)]

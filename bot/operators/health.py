"""Readiness: small probes (store, platforms, queue), each naming what is wrong, if anything."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from typing import Protocol

from compactbot.bot.store.protocols.chat_store import ChatStore
from compactbot.bot.turns.exclusivity import TurnLanes

log = logging.getLogger(__name__)

# One probe may not hold up /readyz longer than this; a store that slow is not ready either.
PROBE_TIMEOUT_SECONDS = 2.0
# A queued job can wait behind a few slow turns (each up to a few model attempts of 60 s); a
# wait longer than this means the chat's queue no longer moves.
QUEUE_STUCK_SECONDS = 600.0
# A key no chat has, so the store probe reads an index and returns nothing.
PROBE_CHAT_KEY = "readyz:probe"


class ReadinessProbe(Protocol):
    name: str

    async def problem(self) -> str | None:
        """None when ready, else one line saying what is wrong."""
        ...


class Connectable(Protocol):
    """A platform that can say whether it is connected (Telegram, Discord)."""

    name: str

    @property
    def connected(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ReadinessReport:
    problems: tuple[str, ...]

    @property
    def ready(self) -> bool:
        return not self.problems


class StoreProbe:
    """The store answers a read, and an SQLite file is still the one that was opened."""

    name = "store"

    def __init__(self, store: ChatStore, path: str | None = None) -> None:
        self._store = store
        self._path = path
        self._identity: tuple[int, int] | None = None

    async def remember_file(self) -> None:
        """Note the database file's identity (device, inode) once the store is open."""
        if self._path is not None:
            self._identity = await asyncio.to_thread(_file_identity, self._path)

    async def problem(self) -> str | None:
        try:
            await self._store.get_chat(PROBE_CHAT_KEY)
        except Exception as exc:
            return f"store: not answering ({type(exc).__name__})"
        if self._identity is None or self._path is None:
            return None
        current = await asyncio.to_thread(_file_identity, self._path)
        if current is None:
            # An open SQLite connection keeps writing to a deleted file, lost at the next start.
            return f"store: database file {self._path} is gone"
        if current != self._identity:
            return f"store: database file {self._path} was replaced"
        return None


class QueueProbe:
    """Chat queues keep moving: nothing has waited longer than QUEUE_STUCK_SECONDS."""

    name = "queue"

    def __init__(self, lanes: TurnLanes, stuck_seconds: float = QUEUE_STUCK_SECONDS) -> None:
        self._lanes = lanes
        self._stuck_seconds = stuck_seconds

    async def problem(self) -> str | None:
        waited = self._lanes.oldest_wait_seconds()
        if waited > self._stuck_seconds:
            return f"queue: a job has waited {waited:.0f}s (limit {self._stuck_seconds:.0f}s)"
        return None


class PlatformProbe:
    def __init__(self, platform: Connectable) -> None:
        self._platform = platform
        self.name = platform.name

    async def problem(self) -> str | None:
        return None if self._platform.connected else f"{self.name}: not connected"


class Readiness:
    """The probes /readyz runs; platforms join once they have started."""

    def __init__(self, probes: list[ReadinessProbe] | None = None) -> None:
        self._probes: list[ReadinessProbe] = list(probes or [])

    def add(self, probe: ReadinessProbe) -> None:
        self._probes.append(probe)

    def watch_platform(self, platform: Connectable) -> None:
        self.add(PlatformProbe(platform))

    async def check(self) -> ReadinessReport:
        return ReadinessReport(tuple(p for _, p in await self.results() if p is not None))

    async def results(self) -> list[tuple[str, str | None]]:
        """Each probe's name and its problem (None: ready), in the order they were added."""
        probes = list(self._probes)
        found = await asyncio.gather(*(_bounded(probe) for probe in probes))
        return [(probe.name, problem) for probe, problem in zip(probes, found, strict=True)]


async def _bounded(probe: ReadinessProbe) -> str | None:
    try:
        return await asyncio.wait_for(probe.problem(), PROBE_TIMEOUT_SECONDS)
    except TimeoutError:
        return f"{probe.name}: no answer within {PROBE_TIMEOUT_SECONDS:.0f}s"
    except Exception as exc:
        log.exception("readiness probe %s failed", probe.name)
        return f"{probe.name}: probe failed ({type(exc).__name__})"


def _file_identity(path: str) -> tuple[int, int] | None:
    with contextlib.suppress(FileNotFoundError):
        stat = os.stat(path)
        return stat.st_dev, stat.st_ino
    return None

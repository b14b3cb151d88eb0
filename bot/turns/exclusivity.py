"""The two exclusivities of a session (SPEC 4): one turn per chat, one compaction per session.

Each is a small protocol. `LaneScheduler` (bot/turns/lanes.py) is the in-process lane; `StoreLeases`
is the compaction lease on the store's lock rows, which also exclude the operator CLI working on
the same SQLite file, with in-process events so a waiting turn wakes the moment a commit lands.
A database-lease implementation for several workers (PostgreSQL) fits the same protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from compactbot.bot.store.protocols.lock_store import LockStore

log = logging.getLogger(__name__)

Job = Callable[[], Awaitable[None]]
Sleep = Callable[[float], Awaitable[None]]
# How often a waiter re-reads a lease held by another process (there is no event to wait on).
FOREIGN_LEASE_POLL_SECONDS = 0.25


class TurnLanes(Protocol):
    """One job at a time per key (a chat's lane), different keys concurrently."""

    def submit(self, key: str, job: Job) -> None: ...
    async def join(self) -> None: ...
    async def close(self, *, grace_seconds: float = 10.0) -> None: ...
    @property
    def queued_jobs(self) -> int:
        """Jobs waiting for their turn, across every lane (for metrics and /readyz)."""
        ...

    def oldest_wait_seconds(self) -> float:
        """How long the longest-waiting queued job has waited."""
        ...


@dataclass(frozen=True, slots=True)
class Lease:
    session_id: int
    holder: str
    ttl_seconds: float


class CompactionLeases(Protocol):
    """At most one compaction of a session at a time, whoever starts it."""

    async def acquire(self, session_id: int, purpose: str) -> Lease | None:
        """The lease, or None at once when another holder has it."""
        ...

    async def renew(self, lease: Lease) -> bool: ...
    async def release(self, lease: Lease) -> None:
        """Drop the lease if still held (a commit may already have released it)."""
        ...

    def finished(self, lease: Lease) -> None:
        """The holder is done (committed or not): wake the waiters."""
        ...

    def in_flight(self, session_id: int) -> bool:
        """A compaction of the session runs in this process."""
        ...

    async def wait_idle(self, session_id: int, timeout_seconds: float) -> bool:
        """Wait until no compaction of the session is in flight; False on timeout."""
        ...

    async def reclaim_dead(self) -> int:
        """Drop leases whose holder process is gone; how many."""
        ...


def new_lock_holder(purpose: str) -> str:
    """`host:pid:purpose:nonce`: the host and pid let start-up tell a dead holder's lease."""
    return f"{socket.gethostname()}:{os.getpid()}:{purpose}:{uuid.uuid4().hex[:8]}"


def holder_is_dead(holder: str, *, at_startup: bool) -> bool:
    """True when the holder is a process of this host that no longer runs.

    At start-up our own pid counts as dead too: a container restarts with the same pid (1),
    and this process has not taken any lease yet. Other hosts' leases are left to expire.
    """
    host, _, rest = holder.partition(":")
    pid_text = rest.partition(":")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return at_startup
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, owned by someone else
    return False


class StoreLeases:
    """`CompactionLeases` on the store's `compression_locks` rows."""

    def __init__(
        self,
        store: LockStore,
        *,
        ttl_seconds: float = 300.0,
        sleep: Sleep = asyncio.sleep,
        poll_seconds: float = FOREIGN_LEASE_POLL_SECONDS,
    ) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._sleep = sleep
        self._poll = poll_seconds
        self._local: dict[int, asyncio.Event] = {}

    @property
    def ttl_seconds(self) -> float:
        return self._ttl

    async def acquire(self, session_id: int, purpose: str) -> Lease | None:
        if session_id in self._local:
            return None
        # Claimed before the first await: two tasks of this process can never both pass here.
        done = self._local[session_id] = asyncio.Event()
        holder = new_lock_holder(purpose)
        try:
            taken = await self._store.acquire_lock(session_id, holder, self._ttl)
        except BaseException:
            self._wake(session_id, done)
            raise
        if not taken:
            self._wake(session_id, done)
            return None
        return Lease(session_id, holder, self._ttl)

    async def renew(self, lease: Lease) -> bool:
        return await self._store.renew_lock(lease.session_id, lease.holder, lease.ttl_seconds)

    async def release(self, lease: Lease) -> None:
        await self._store.release_lock(lease.session_id, lease.holder)

    def finished(self, lease: Lease) -> None:
        done = self._local.get(lease.session_id)
        if done is not None:
            self._wake(lease.session_id, done)

    def in_flight(self, session_id: int) -> bool:
        return session_id in self._local

    async def wait_idle(self, session_id: int, timeout_seconds: float) -> bool:
        done = self._local.get(session_id)
        if done is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), timeout_seconds)
            return done.is_set()
        waited = 0.0
        while await self._store.lock_holder(session_id) is not None:
            if waited >= timeout_seconds:
                return False
            await self._sleep(self._poll)
            waited += self._poll
        return True

    async def reclaim_dead(self) -> int:
        reclaimed = 0
        for lock in await self._store.list_locks():
            if lock.session_id in self._local or not holder_is_dead(lock.holder, at_startup=True):
                continue
            if await self._store.release_lock(lock.session_id, lock.holder):
                reclaimed += 1
                log.warning(
                    "reclaimed a dead holder's compaction lease (session=%d)", lock.session_id
                )
        return reclaimed

    def _wake(self, session_id: int, done: asyncio.Event) -> None:
        if self._local.get(session_id) is done:
            del self._local[session_id]
        done.set()

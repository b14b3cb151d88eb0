"""Leadership among workers: whoever holds a PostgreSQL advisory lock leads (SPEC 15).

The lock is session-level, so it lives exactly as long as one connection: a dedicated one, never
a pooled one, which the pool could hand to other work or reset. When the leader dies, the server
ends its session and frees the lock; a follower's next attempt takes it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any, Protocol

import asyncpg

from compactbot.bot.store.postgres.database import redacted_dsn
from compactbot.bot.store.postgres.store import PostgresStore

log = logging.getLogger(__name__)

# A follower tries again this often, so it leads at most this long after the leader's death.
RETRY_SECONDS = 2.0
# The leader pings its connection this often: a dead connection is noticed within this bound.
CHECK_SECONDS = 2.0
CONNECT_TIMEOUT_SECONDS = 5.0
# The server probes a silent leader connection after 4 s, every 1 s, 3 times: a leader whose
# host died (no FIN ever comes) frees the lock about 7 s after its last ping, so with one retry
# interval a follower leads within 10 s. A leader cut off from the server stops first: its ping
# times out after CHECK_SECONDS.
_KEEPALIVE_SETTINGS = {
    "tcp_keepalives_idle": "4",
    "tcp_keepalives_interval": "1",
    "tcp_keepalives_count": "3",
}
_DB_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)
# Keyed per schema, like the migrations, so installations sharing a database elect separately.
_TRY_LOCK_SQL = "SELECT pg_try_advisory_lock(hashtext($1 || current_schema()))"


class Leadership(Protocol):
    """What the overnight job asks before it runs (and between chats), and waits on.

    `start` (idempotent) begins campaigning and `stop` ends it; `leading` is set while this
    process leads and `following` while it does not, so a job can wait for either change.
    """

    leading: asyncio.Event
    following: asyncio.Event

    @property
    def is_leader(self) -> bool: ...
    def start(self) -> None: ...
    async def stop(self) -> None: ...


class SoleLeader:
    """One process on its own database (SQLite): it always leads."""

    def __init__(self) -> None:
        self.leading = asyncio.Event()
        self.leading.set()
        self.following = asyncio.Event()

    @property
    def is_leader(self) -> bool:
        return True

    def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass


class ConnectionLost(Exception):
    """The dedicated connection closed; whatever lock it held is gone with it."""


class AdvisoryLeadership:
    """Campaigns for the advisory lock `name` in the background; `leading` is set while held."""

    def __init__(
        self,
        dsn: str,
        name: str = "overnight",
        *,
        retry_seconds: float = RETRY_SECONDS,
        check_seconds: float = CHECK_SECONDS,
    ) -> None:
        self._dsn = dsn
        self._lock_name = f"compactbot.leader.{name}."
        self._name = name
        self._retry_seconds = retry_seconds
        self._check_seconds = check_seconds
        self._conn: Any = None
        self._task: asyncio.Task[None] | None = None
        self.leading = asyncio.Event()
        self.following = asyncio.Event()
        self.following.set()
        self.attempts = 0  # lock attempts made, for tests and status

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    @property
    def backend_pid(self) -> int | None:
        """The server process of the dedicated connection (None while disconnected)."""
        conn = self._conn
        return int(conn.get_server_pid()) if conn is not None and not conn.is_closed() else None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"leadership-{self._name}")

    async def stop(self) -> None:
        """Stop campaigning; a leader's lock is released by closing its connection."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        # A close the server never answers must not hold up shutdown: dropping the socket
        # ends the session, and its lock, all the same.
        await asyncio.wait({task}, timeout=CONNECT_TIMEOUT_SECONDS)
        if not task.done():
            log.warning("leadership campaign did not stop in time (lock=%s)", self._name)
            conn = self._conn
            if conn is not None:
                conn.terminate()
            return
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _run(self) -> None:
        while True:
            try:
                await self._campaign()
            except (ConnectionLost, *_DB_ERRORS) as err:
                log.warning(
                    "leadership connection lost (lock=%s db=%s): %s",
                    self._name,
                    redacted_dsn(self._dsn),
                    type(err).__name__,
                )
            await asyncio.sleep(self._retry_seconds)

    async def _campaign(self) -> None:
        conn = await asyncpg.connect(
            self._dsn, timeout=CONNECT_TIMEOUT_SECONDS, server_settings=_KEEPALIVE_SETTINGS
        )
        lost = asyncio.Event()
        conn.add_termination_listener(lambda _conn: lost.set())
        self._conn = conn
        try:
            while not await self._try_lock(conn):
                await self._wait_lost(lost, self._retry_seconds)
            self.following.clear()
            self.leading.set()
            log.info("leading (lock=%s db=%s)", self._name, redacted_dsn(self._dsn))
            while True:
                await self._wait_lost(lost, self._check_seconds)
                await conn.fetchval("SELECT 1", timeout=self._check_seconds)
        finally:
            if self.leading.is_set():
                self.leading.clear()
                self.following.set()
                log.info("no longer leading (lock=%s)", self._name)
            try:
                await _close(conn)
            finally:  # kept until closed: stop() drops it if closing never ends
                self._conn = None

    async def _try_lock(self, conn: Any) -> bool:
        self.attempts += 1
        return bool(await conn.fetchval(_TRY_LOCK_SQL, self._lock_name))

    @staticmethod
    async def _wait_lost(lost: asyncio.Event, seconds: float) -> None:
        """Wait `seconds`, raising ConnectionLost as soon as the connection closes."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(lost.wait(), seconds)
        if lost.is_set():
            raise ConnectionLost


def leadership_for(store: object) -> Leadership:
    """An advisory-lock campaign on PostgreSQL (several workers); the sole leader otherwise.
    Only the store's backend matters: the campaign holds a connection of its own."""
    if isinstance(store, PostgresStore):
        return AdvisoryLeadership(store.dsn)
    return SoleLeader()


async def _close(conn: Any) -> None:
    if conn.is_closed():  # the server ended it (a terminated backend): nothing to say to it
        return
    try:
        await asyncio.wait_for(conn.close(), CONNECT_TIMEOUT_SECONDS)
    except _DB_ERRORS:
        conn.terminate()  # the session ends either way, and its lock with it
    except asyncio.CancelledError:
        conn.terminate()
        raise

"""Discord IDENTIFY pacing across worker processes (SPEC 15).

Discord accepts one IDENTIFY per five seconds for a bot; discord.py paces the shards of one
client, but `compactbot worker --shards` runs several clients. Each identify here takes a
PostgreSQL advisory lock first and keeps it for the interval after, on a dedicated connection,
so identifies from every worker on the schema are spaced out; a dead holder's lock goes with
its connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

import asyncpg

log = logging.getLogger(__name__)

# Discord's window is 5 s; the margin covers clock and network jitter between workers.
IDENTIFY_INTERVAL_SECONDS = 5.5
CONNECT_TIMEOUT_SECONDS = 5.0
_LOCK_SQL = "SELECT pg_advisory_lock(hashtext('compactbot.discord.identify.' || current_schema()))"


class IdentifyPacing:
    def __init__(self, dsn: str, *, interval_seconds: float = IDENTIFY_INTERVAL_SECONDS) -> None:
        self._dsn = dsn
        self._interval = interval_seconds
        self._holds: set[asyncio.Task[None]] = set()

    async def before_identify(self) -> None:
        """Return when this process may identify; the slot stays taken for the interval."""
        conn = await asyncpg.connect(self._dsn, timeout=CONNECT_TIMEOUT_SECONDS)
        try:
            await conn.execute(_LOCK_SQL)
        except BaseException:
            conn.terminate()
            raise
        hold = asyncio.create_task(self._hold(conn), name="discord-identify-slot")
        self._holds.add(hold)
        hold.add_done_callback(self._holds.discard)

    async def close(self) -> None:
        for hold in list(self._holds):
            hold.cancel()
        await asyncio.gather(*self._holds, return_exceptions=True)

    async def _hold(self, conn: Any) -> None:
        try:
            await asyncio.sleep(self._interval)
        finally:
            # Ending the session frees the lock, whether or not the unlock statement ran.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.close(), CONNECT_TIMEOUT_SECONDS)
            conn.terminate()

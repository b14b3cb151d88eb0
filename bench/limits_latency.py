"""What the shared limits cost per call (SPEC 15): `python -m bench.limits_latency`.

Times each store call that the hot path makes: a rate check per addressed group message, a
notice reset per answered turn, an admin cache lookup per admin check. SQLite on a temporary
file; PostgreSQL on COMPACTBOT_TEST_PG_DSN (skipped when unreachable).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from compactbot.bot.store import PostgresStore, SqliteStore
from compactbot.bot.store.base import StoreError
from compactbot.bot.store.protocols.shared_limits import SharedLimits
from tests import postgres_server

CALLS = 2000
MEMBERS = 20
PER_MINUTE = 20


async def _timed(call: Callable[[int], Awaitable[object]]) -> str:
    micros = []
    for i in range(CALLS):
        started = time.perf_counter()
        await call(i)
        micros.append((time.perf_counter() - started) * 1e6)
    micros.sort()
    p95 = micros[int(0.95 * CALLS)]
    return f"median {statistics.median(micros):.0f} µs, p95 {p95:.0f} µs"


async def _measure(store: SharedLimits, label: str) -> None:
    now = time.time()
    await store.cache_admin("admin", True, now + 3600)

    def rate(i: int) -> Awaitable[bool]:
        return store.rate_hit(f'["g","u{i % MEMBERS}"]', PER_MINUTE, now + i * 0.01)

    print(f"{label}: rate_hit ({MEMBERS} members, {PER_MINUTE}/min): {await _timed(rate)}")
    reset = await _timed(lambda i: store.notice_reset(f'["failure","g{i}"]'))
    print(f"{label}: notice_reset with nothing to reset: {reset}")
    cached = await _timed(lambda i: store.cached_admin("admin", now))
    print(f"{label}: cached_admin hit: {cached}")


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        async with SqliteStore(Path(folder) / "limits.db") as sqlite:
            await _measure(sqlite, "sqlite")
    try:
        async with (
            postgres_server.fresh_schema(postgres_server.base_dsn()) as dsn,
            PostgresStore(dsn) as postgres,
        ):
            await _measure(postgres, "postgresql")
    except (OSError, StoreError) as err:
        print(f"postgresql: skipped ({type(err).__name__})")


if __name__ == "__main__":
    asyncio.run(main())

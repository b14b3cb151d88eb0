"""Send slots shared by every worker: a platform's limits kept by the fleet, not per process.

Each paced name (the platform's own limit, one chat's) is a leaky bucket in one row; taking a
slot is one statement, so workers racing for the same name get consecutive slots and none
waits on another's lock for longer than that statement.
"""

from __future__ import annotations

from collections.abc import Callable

from compactbot.bot.store.postgres.database import PostgresDatabase

# A leaky bucket kept as the time the bucket is empty again (`next_at`): a request may leave as
# soon as fewer than `burst` are ahead of it, i.e. `(burst - 1) * interval` before that time.
_SLOT_SQL = """
INSERT INTO send_pacing(name, next_at) VALUES ($1, $2::float8 + $3::float8)
ON CONFLICT (name) DO UPDATE
    SET next_at = greatest(send_pacing.next_at, $2::float8) + $3::float8
RETURNING greatest($2::float8, next_at - $3::float8 * $4::float8)
"""


class PostgresPacing:
    """Slots of the shared pacing; times come from the store's clock (seconds)."""

    def __init__(self, db: PostgresDatabase, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    def now(self) -> float:
        return self._clock()

    async def slot(self, name: str, interval: float, not_before: float, burst: int = 1) -> float:
        """When a request of `name` may leave: at `not_before`, or once the `burst` requests
        ahead of it have drained at one an `interval`; the slot is this caller's from then on."""
        row = await self._db.fetchone(_SLOT_SQL, (name, not_before, interval, burst))
        return float(row[0])

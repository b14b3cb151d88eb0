"""The reply outbox on PostgreSQL: what finished jobs said, delivered once, in order per chat.

A row is `pending` from the job's last commit, `claimed` by the worker about to send it,
`sending` (committed) once its first request leaves for the platform (after any client-side
pacing), then `sent` or `failed`. A claimed row whose worker died never left: it is pending again.
A row left `sending` may or may not have reached the chat; it becomes `unknown`, never resent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.bot.store.postgres.database import PostgresDatabase

# Only the oldest undelivered row of each chat is eligible, so a chat's replies go out in order
# even when its jobs finished on different workers.
_CLAIM_SQL = """
UPDATE reply_outbox SET state = 'claimed', holder = $1, lease_until = $2::float8 + $3::float8
WHERE id IN (
    SELECT r.id FROM reply_outbox r
    WHERE r.state = 'pending'
      AND NOT EXISTS (
          SELECT 1 FROM reply_outbox o
          WHERE o.lane = r.lane AND o.state IN ('pending', 'claimed', 'sending') AND o.id < r.id
      )
      AND r.platform = ANY($5::text[])
    ORDER BY r.id LIMIT $4
    FOR UPDATE SKIP LOCKED
)
RETURNING id, chat_key, platform, target, text, nonce
"""
# A platform that drops repeated nonces gets the row again while the first attempt is recent
# enough for the platform to remember its nonce; every other one is `unknown` for good.
_ABANDONED_SQL = """
UPDATE reply_outbox SET holder = NULL, state = CASE
    WHEN state = 'claimed' THEN 'pending'
    WHEN platform = ANY($2::text[]) AND attempted_at > $1::float8 - $3::float8 THEN 'pending'
    ELSE 'unknown' END
WHERE state IN ('claimed', 'sending') AND lease_until < $1
RETURNING id, chat_key, platform, state, (attempted_at IS NOT NULL) AS attempted
"""
_MARK_SENDING_SQL = """
UPDATE reply_outbox SET state = 'sending', attempted_at = coalesce(attempted_at, $3::float8)
WHERE id = $1 AND holder = $2 AND state IN ('claimed', 'sending')
"""


@dataclass(frozen=True, slots=True)
class OutboxRow:
    id: int
    chat_key: str
    platform: str
    target: dict[str, Any]
    text: str
    nonce: str


@dataclass(frozen=True, slots=True)
class Abandoned:
    """A send whose worker died between marking it and recording the outcome."""

    id: int
    chat_key: str
    platform: str
    resent: bool  # back to pending (same nonce), else unknown
    attempted: bool  # False: it was claimed but never left, so pending again is always safe


class PostgresOutbox:
    def __init__(self, db: PostgresDatabase, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    async def claim(
        self, holder: str, limit: int, ttl_seconds: float, platforms: Sequence[str]
    ) -> list[OutboxRow]:
        """Claim up to `limit` rows for `holder`; each is marked sending just before it leaves."""
        async with self._db.transaction() as conn:
            found = await conn.fetch(
                _CLAIM_SQL, holder, self._clock(), ttl_seconds, limit, list(platforms)
            )
        return sorted(
            (
                OutboxRow(
                    int(r["id"]),
                    r["chat_key"],
                    r["platform"],
                    json.loads(r["target"]),
                    r["text"],
                    r["nonce"],
                )
                for r in found
            ),
            key=lambda row: row.id,
        )

    async def mark_sending(self, row_id: int, holder: str) -> bool:
        """Committed before the row's first request leaves; False when `holder` lost the row."""
        async with self._db.transaction() as conn:
            status = await conn.execute(_MARK_SENDING_SQL, row_id, holder, self._clock())
        return bool(status.endswith(" 1"))

    async def unmark_sending(self, row_id: int, holder: str) -> bool:
        """Back to claimed: the only request that left was refused unread (a flood wait)."""
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "UPDATE reply_outbox SET state = 'claimed'"
                " WHERE id = $1 AND holder = $2 AND state = 'sending'",
                row_id,
                holder,
            )
        return bool(status.endswith(" 1"))

    async def settle(self, row_id: int, holder: str, state: str) -> None:
        """Record the outcome of our own send: sent, failed, or unknown."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE reply_outbox SET state = $3, sent_at = $4, holder = NULL"
                " WHERE id = $1 AND holder = $2 AND state IN ('claimed', 'sending')",
                row_id,
                holder,
                state,
                self._clock(),
            )

    async def abandon_stale(
        self, resend_platforms: Sequence[str] = (), nonce_window_seconds: float = 0.0
    ) -> list[Abandoned]:
        """Rows left `sending` past their lease become `unknown`: never blindly repeated. On
        `resend_platforms`, an attempt made within the nonce window goes back to pending, and so
        does every claimed row that never left."""
        async with self._db.transaction() as conn:
            found = await conn.fetch(
                _ABANDONED_SQL, self._clock(), list(resend_platforms), nonce_window_seconds
            )
        return [
            Abandoned(
                int(r["id"]),
                r["chat_key"],
                r["platform"],
                r["state"] == "pending",
                bool(r["attempted"]),
            )
            for r in found
        ]

    async def states(self) -> dict[int, str]:
        """Every row's state by id (status and tests)."""
        found = await self._db.fetchall("SELECT id, state FROM reply_outbox ORDER BY id")
        return {int(r["id"]): r["state"] for r in found}

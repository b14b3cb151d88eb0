"""What the ingest transaction writes for a durable turn, shared by the store and the inbox."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from compactbot.bot.store.base import IngestItem, IngestResult, TurnFence, TurnLost

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

# One channel per schema: installations (and the tests' schemas) sharing a server wake only
# their own workers. Hashed, because a channel name is at most 63 bytes and a schema name may
# be that long itself. Notifications go out at commit, never for a rolled-back enqueue.
CHANNEL_SQL = "SELECT 'compactbot_work_' || md5(current_schema())"
NOTIFY_SQL = f"SELECT pg_notify(({CHANNEL_SQL}), '')"
# A claimed job is owned by (id, holder, attempts) while it runs; every claim bumps attempts.
FENCE_SQL = "id = $1 AND holder = $2 AND attempts = $3 AND state = 'doing'"
INSERT_JOB_SQL = (
    "INSERT INTO turn_inbox(lane, chat_key, kind, payload, created_at)"
    " VALUES ($1, $2, $3, $4::jsonb, $5) RETURNING id"
)


async def enqueue_turn(
    conn: PooledConnection, item: IngestItem, result: IngestResult, now: float
) -> None:
    """The turn of an addressed message, in the transaction that stores the message (which
    then sends NOTIFY_SQL once)."""
    assert item.enqueue is not None and result.session is not None
    payload = {
        **item.enqueue.payload,
        "message_id": result.message_id,
        "session_id": result.session.id,
    }
    await conn.execute(
        INSERT_JOB_SQL, item.enqueue.lane, item.chat_key, "turn", json.dumps(payload), now
    )


async def check_turn_fence(conn: PooledConnection, fence: TurnFence | None) -> None:
    """Raise TurnLost, inside the write's transaction, when another worker took the turn over.

    FOR SHARE: a takeover (an UPDATE of the job row) waits for this transaction, so it commits
    while the turn is still ours or not at all."""
    if fence is None:
        return
    owned = await conn.fetchval(
        f"SELECT 1 FROM turn_inbox WHERE {FENCE_SQL} FOR SHARE",
        fence.job_id,
        fence.holder,
        fence.attempts,
    )
    if owned is None:
        raise TurnLost(f"turn job {fence.job_id} was taken over")

"""What the ingest transaction writes for a durable turn, shared by the store and the inbox."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from bot.store.base import IngestItem, IngestResult

if TYPE_CHECKING:
    from bot.store.postgres_database import PooledConnection

# One channel per schema: installations (and the tests' schemas) sharing a server wake only
# their own workers. Notifications go out at commit, never for a rolled-back enqueue.
CHANNEL_PREFIX = "compactbot.work."
NOTIFY_SQL = "SELECT pg_notify('compactbot.work.' || current_schema(), '')"
INSERT_JOB_SQL = (
    "INSERT INTO turn_inbox(lane, chat_key, kind, payload, created_at)"
    " VALUES ($1, $2, $3, $4::jsonb, $5) RETURNING id"
)


async def enqueue_turn(
    conn: PooledConnection, item: IngestItem, result: IngestResult, now: float
) -> None:
    """The turn of an addressed message, in the transaction that stores the message."""
    assert item.enqueue is not None and result.session is not None
    payload = {
        **item.enqueue.payload,
        "message_id": result.message_id,
        "session_id": result.session.id,
    }
    await conn.execute(
        INSERT_JOB_SQL, item.enqueue.lane, item.chat_key, "turn", json.dumps(payload), now
    )
    await conn.execute(NOTIFY_SQL)

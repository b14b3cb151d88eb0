"""Appending to a PostgreSQL session's transcript: open or start it, add rows, keep its totals.

The steps of the ingest and append transactions in bot/store/postgres/ingest.py; the caller holds
the transaction, and the session row's lock orders its inserts against other writers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import (
    IngestItem,
    IngestResult,
    NewMessage,
    SessionNotFound,
    SessionRecord,
)
from compactbot.bot.store.postgres import rows as postgres_rows
from compactbot.bot.store.postgres.database import affected

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

OPEN_SESSION_SQL = (
    "SELECT * FROM sessions WHERE chat_key = $1 AND scope_user IS NOT DISTINCT FROM $2"
    " AND ended_at IS NULL"
)
_ADD_TOTALS_SQL = (
    "UPDATE sessions SET active_tokens = active_tokens + $1,"
    " active_messages = active_messages + $2, last_activity_at = $3 WHERE id = $4"
)


async def open_appending(
    conn: PooledConnection,
    item: IngestItem,
    now: float,
    open_sessions: dict[tuple[str, str | None], Appending],
) -> Appending:
    """The batch's share for the item's session, which is locked first (or started)."""
    scope = (item.chat_key, item.scope_user)
    appending = open_sessions.get(scope)
    if appending is None:
        row: Any = await conn.fetchrow(OPEN_SESSION_SQL + " FOR UPDATE", *scope)
        if row is None:
            row = await start_session(conn, item.chat_key, item.scope_user, now)
        session = rows.session_from_row(row)
        appending = Appending(session, await max_seq(conn, session.id))
        open_sessions[scope] = appending
    return appending


@dataclass(slots=True)
class Appending:
    """One session's share of an ingest batch: rows go in at once, totals once at the end."""

    session: SessionRecord
    seq: int
    tokens: int = 0
    messages: int = 0

    async def add(
        self, conn: PooledConnection, message: NewMessage | None, now: float
    ) -> IngestResult:
        message_id = None
        if message is not None:
            message = message.analysed()
            self.seq += 1
            message_id = int(
                await conn.fetchval(
                    postgres_rows.INSERT_MESSAGE_SQL + " RETURNING id",
                    *postgres_rows.message_params(message, self.session.id, self.seq, now),
                )
            )
            self.tokens += message.tokens
            self.messages += 1
        session = replace(
            self.session,
            active_tokens=self.session.active_tokens + self.tokens,
            active_messages=self.session.active_messages + self.messages,
            last_activity_at=now if self.messages else self.session.last_activity_at,
        )
        stated = message is not None and message.states_rule
        return IngestResult(False, session, message_id, states_rule=stated)

    async def flush(self, conn: PooledConnection, now: float) -> None:
        if self.messages:
            await conn.execute(_ADD_TOTALS_SQL, self.tokens, self.messages, now, self.session.id)


async def append_rows(
    conn: PooledConnection, session_id: int, messages: Sequence[NewMessage], now: float
) -> list[int]:
    if not messages:
        return []
    # First: the session row's lock orders this insert against other writers of it.
    status = await conn.execute(
        _ADD_TOTALS_SQL, sum(m.tokens for m in messages), len(messages), now, session_id
    )
    if affected(status) != 1:
        raise SessionNotFound(session_id)
    return await insert_after_max(conn, session_id, messages, now)


async def insert_after_max(
    conn: PooledConnection, session_id: int, messages: Sequence[NewMessage], now: float
) -> list[int]:
    """Insert after the session's last seq; the new ids in order (the caller holds the row lock)."""
    base = await max_seq(conn, session_id)
    await conn.executemany(
        postgres_rows.INSERT_MESSAGE_SQL,
        [
            postgres_rows.message_params(m, session_id, base + i + 1, now)
            for i, m in enumerate(messages)
        ],
    )
    found = await conn.fetch(
        "SELECT id FROM messages WHERE session_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq",
        session_id,
        base,
        base + len(messages),
    )
    return [int(r[0]) for r in found]


async def start_session(
    conn: PooledConnection, chat_key: str, scope_user: str | None, now: float
) -> Any:
    """Open a session unless another worker just did; either way return the open one, locked."""
    platform = chat_key.split(":", 1)[0]
    await conn.execute(
        "INSERT INTO chats(key, platform, created_at) VALUES ($1, $2, $3)"
        " ON CONFLICT(key) DO NOTHING",
        chat_key,
        platform,
        now,
    )
    row = await conn.fetchrow(
        "INSERT INTO sessions(chat_key, scope_user, started_at, last_activity_at)"
        " VALUES ($1, $2, $3, $4)"
        " ON CONFLICT (chat_key, (coalesce(scope_user, ''))) WHERE ended_at IS NULL"
        " DO NOTHING RETURNING *",
        chat_key,
        scope_user,
        now,
        now,
    )
    if row is None:
        row = await conn.fetchrow(OPEN_SESSION_SQL + " FOR UPDATE", chat_key, scope_user)
    return row


async def max_seq(conn: PooledConnection, session_id: int) -> int:
    return int(
        await conn.fetchval(
            "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = $1", session_id
        )
    )

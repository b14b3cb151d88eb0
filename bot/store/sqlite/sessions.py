"""The SQLite `SessionStore`: a chat's sessions, their running totals and compressor state."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import aiosqlite

from compactbot.bot.store import rows
from compactbot.bot.store.base import SessionNotFound, SessionRecord, StateDelta, TurnFence
from compactbot.bot.store.sqlite.appends import (
    INSERT_CHAT_SQL,
    INSERT_SESSION_SQL,
    OPEN_SESSION_SQL,
)
from compactbot.bot.store.sqlite.database import Database, one
from compactbot.bot.store.sqlite.ingest import refuse_fence
from compactbot.compression.state import CompressorState

COUNT_ACTIVE_SQL = (
    "SELECT coalesce(sum(tokens), 0), count(*) FROM messages WHERE session_id = ? AND active = 1"
)
WRITE_STATE_SQL = (
    f"UPDATE sessions SET {', '.join(f'{column} = ?' for column in rows.STATE_COLUMNS)}"
    " WHERE id = ?"
)


class SqliteSessions:
    """The `SessionStore` methods of `SqliteStore`."""

    _db: Database
    _clock: Callable[[], float]

    async def active_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        row = await self._db.fetchone(OPEN_SESSION_SQL, (chat_key, scope_user))
        if row is not None:
            return rows.session_from_row(row)
        async with self._db.transaction() as conn:
            row = await one(conn, OPEN_SESSION_SQL, (chat_key, scope_user))
            if row is None:
                row = await start_session(conn, chat_key, scope_user, self._clock())
        return rows.session_from_row(row)

    async def get_session(self, session_id: int) -> SessionRecord:
        row = await self._db.fetchone("SELECT * FROM sessions WHERE id = ?", (session_id,))
        if row is None:
            raise SessionNotFound(session_id)
        return rows.session_from_row(row)

    async def new_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE sessions SET ended_at = ? WHERE chat_key = ? AND scope_user IS ?"
                " AND ended_at IS NULL",
                (self._clock(), chat_key, scope_user),
            )
            row = await start_session(conn, chat_key, scope_user, self._clock())
        return rows.session_from_row(row)

    async def list_sessions(self, chat_key: str | None = None) -> list[SessionRecord]:
        if chat_key is None:
            found = await self._db.fetchall("SELECT * FROM sessions ORDER BY id")
        else:
            found = await self._db.fetchall(
                "SELECT * FROM sessions WHERE chat_key = ? ORDER BY id", (chat_key,)
            )
        return [rows.session_from_row(r) for r in found]

    async def save_compressor_state(self, session_id: int, state: CompressorState) -> None:
        assignments = ", ".join(f"{column} = ?" for column in rows.STATE_COLUMNS)
        await self._update_session(
            f"UPDATE sessions SET {assignments} WHERE id = ?",
            (*rows.state_params(state), session_id),
        )

    async def apply_state_delta(
        self,
        session_id: int,
        expected_version: int,
        delta: StateDelta,
        *,
        fence: TurnFence | None = None,
    ) -> CompressorState | None:
        refuse_fence(fence)
        # Once per answered turn: one writer-thread hop instead of one per statement.
        return await self._db.run_in_writer(
            partial(
                _apply_state_delta,
                session_id=session_id,
                expected_version=expected_version,
                delta=delta,
            )
        )

    async def set_system_prompt(self, session_id: int, prompt: str | None) -> None:
        await self._update_session(
            "UPDATE sessions SET system_prompt = ? WHERE id = ?", (prompt, session_id)
        )

    async def recount(self, session_id: int) -> tuple[int, int]:
        found = await self._db.fetchall(COUNT_ACTIVE_SQL, (session_id,))
        return int(found[0][0]), int(found[0][1])

    async def _update_session(self, sql: str, params: Sequence[Any]) -> None:
        async with self._db.transaction() as conn:
            cur = await conn.execute(sql, params)
            if cur.rowcount != 1:
                raise SessionNotFound(params[-1])


async def start_session(
    conn: aiosqlite.Connection, chat_key: str, scope_user: str | None, now: float
) -> Any:
    await conn.execute(INSERT_CHAT_SQL, (chat_key, chat_key.split(":", 1)[0], now))
    cur = await conn.execute(INSERT_SESSION_SQL, (chat_key, scope_user, now, now))
    return await one(conn, "SELECT * FROM sessions WHERE id = ?", (cur.lastrowid,))


def _apply_state_delta(
    conn: sqlite3.Connection, session_id: int, expected_version: int, delta: StateDelta
) -> CompressorState | None:
    row = conn.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
    if row is None:
        raise SessionNotFound(session_id)
    if row["version"] != expected_version:
        return None
    state = delta(rows.session_from_row(row).compressor)
    conn.execute(WRITE_STATE_SQL, (*rows.state_params(state), session_id))
    return state

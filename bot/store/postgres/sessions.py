"""The PostgreSQL `SessionStore`: bot/store/sqlite/sessions.py in PostgreSQL's dialect; a
write of a session takes its row's lock first."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import SessionNotFound, SessionRecord, StateDelta, TurnFence
from compactbot.bot.store.postgres import rows as postgres_rows
from compactbot.bot.store.postgres.appends import OPEN_SESSION_SQL, start_session
from compactbot.bot.store.postgres.database import PostgresDatabase, affected
from compactbot.bot.store.postgres.queue.queue_sql import check_turn_fence
from compactbot.compression.state import CompressorState

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection


COUNT_ACTIVE_SQL = (
    "SELECT coalesce(sum(tokens), 0), count(*) FROM messages WHERE session_id = $1 AND active"
)
_STATE_ASSIGNMENTS = ", ".join(
    f"{column} = ${n}" for n, column in enumerate(rows.STATE_COLUMNS, start=1)
)
WRITE_STATE_SQL = (
    f"UPDATE sessions SET {_STATE_ASSIGNMENTS} WHERE id = ${len(rows.STATE_COLUMNS) + 1}"
)


class PostgresSessions:
    """The `SessionStore` methods of `PostgresStore`."""

    _db: PostgresDatabase
    _clock: Callable[[], float]

    async def active_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        row = await self._db.fetchone(OPEN_SESSION_SQL, (chat_key, scope_user))
        if row is not None:
            return rows.session_from_row(row)
        async with self._db.transaction() as conn:
            row = await start_session(conn, chat_key, scope_user, self._clock())
        return rows.session_from_row(row)

    async def get_session(self, session_id: int) -> SessionRecord:
        row = await self._db.fetchone("SELECT * FROM sessions WHERE id = $1", (session_id,))
        if row is None:
            raise SessionNotFound(session_id)
        return rows.session_from_row(row)

    async def new_session(self, chat_key: str, scope_user: str | None = None) -> SessionRecord:
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE sessions SET ended_at = $1 WHERE chat_key = $2"
                " AND scope_user IS NOT DISTINCT FROM $3 AND ended_at IS NULL",
                self._clock(),
                chat_key,
                scope_user,
            )
            row = await start_session(conn, chat_key, scope_user, self._clock())
        return rows.session_from_row(row)

    async def list_sessions(self, chat_key: str | None = None) -> list[SessionRecord]:
        if chat_key is None:
            found = await self._db.fetchall("SELECT * FROM sessions ORDER BY id")
        else:
            found = await self._db.fetchall(
                "SELECT * FROM sessions WHERE chat_key = $1 ORDER BY id", (chat_key,)
            )
        return [rows.session_from_row(r) for r in found]

    async def save_compressor_state(self, session_id: int, state: CompressorState) -> None:
        await self._update_session(
            WRITE_STATE_SQL, (*postgres_rows.state_params(state), session_id)
        )

    async def apply_state_delta(
        self,
        session_id: int,
        expected_version: int,
        delta: StateDelta,
        *,
        fence: TurnFence | None = None,
    ) -> CompressorState | None:
        async with self._db.transaction() as conn:
            await check_turn_fence(conn, fence)
            row: Any = await conn.fetchrow(
                "SELECT * FROM sessions WHERE id = $1 FOR UPDATE", session_id
            )
            if row is None:
                raise SessionNotFound(session_id)
            if row["version"] != expected_version:
                return None
            state = delta(rows.session_from_row(row).compressor)
            await write_state(conn, session_id, state)
        return state

    async def set_system_prompt(self, session_id: int, prompt: str | None) -> None:
        await self._update_session(
            "UPDATE sessions SET system_prompt = $1 WHERE id = $2", (prompt, session_id)
        )

    async def recount(self, session_id: int) -> tuple[int, int]:
        row = await self._db.fetchone(COUNT_ACTIVE_SQL, (session_id,))
        return int(row[0]), int(row[1])

    async def _update_session(self, sql: str, params: Sequence[Any]) -> None:
        async with self._db.transaction() as conn:
            if affected(await conn.execute(sql, *params)) != 1:
                raise SessionNotFound(params[-1])


async def write_state(conn: PooledConnection, session_id: int, state: CompressorState) -> None:
    await conn.execute(WRITE_STATE_SQL, *postgres_rows.state_params(state), session_id)

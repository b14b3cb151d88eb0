"""The PostgreSQL `TranscriptReads` (search aside, in bot/store/postgres/search.py):
bot/store/sqlite/transcript.py in PostgreSQL's dialect."""

from __future__ import annotations

from collections.abc import Sequence

from compactbot.bot.store import rows
from compactbot.bot.store.base import SessionNotFound, StoredMessage
from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.postgres.memory import load_memory
from compactbot.compression.memory import Memory


class PostgresTranscript:
    """The transcript reads of `PostgresStore`."""

    _db: PostgresDatabase

    async def load_active(self, session_id: int) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT * FROM messages WHERE session_id = $1 AND active ORDER BY seq", (session_id,)
        )
        return [rows.message_from_row(r) for r in found]

    async def load_appended(
        self, session_id: int, after_id: int, version: int
    ) -> list[StoredMessage] | None:
        # One statement, so the rows and the version come from the same snapshot.
        found = await self._db.fetchall(_APPENDED_SQL, (after_id, session_id))
        if not found:
            raise SessionNotFound(session_id)
        if found[0]["current_version"] != version:
            return None
        return [rows.message_from_row(r) for r in found if r["id"] is not None]

    async def load_history(
        self, chat_key: str, *, include_archived: bool = True
    ) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.chat_key = $1 AND ($2 OR m.active) ORDER BY m.session_id, m.seq",
            (chat_key, include_archived),
        )
        return [rows.message_from_row(r) for r in found]

    async def count_archived(self, chat_key: str) -> int:
        row = await self._db.fetchone(
            "SELECT count(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.chat_key = $1 AND NOT m.active",
            (chat_key,),
        )
        return int(row[0])

    async def load_messages(self, session_id: int, ids: Sequence[int]) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT * FROM messages WHERE session_id = $1 AND id = ANY($2::bigint[]) ORDER BY id",
            (session_id, list(dict.fromkeys(ids))),
        )
        return [rows.message_from_row(r) for r in found]

    async def load_memory(self, session_id: int) -> Memory:
        return await load_memory(self._db, session_id)


# The session row always comes back (with NULL message columns when nothing is new); the
# (session_id, active, seq) index makes this a scan of the active rows only.
_APPENDED_SQL = (
    "SELECT s.version AS current_version, m.* FROM sessions s"
    " LEFT JOIN messages m ON m.session_id = s.id AND m.active AND m.id > $1"
    " WHERE s.id = $2 ORDER BY m.seq"
)

"""The SQLite `TranscriptReads` (search aside, in bot/store/sqlite/search.py): a session's
rows, a chat's history and the session memory."""

from __future__ import annotations

from collections.abc import Sequence

from compactbot.bot.store import rows
from compactbot.bot.store.base import SessionNotFound, StoredMessage
from compactbot.bot.store.memory_rows import memory_from_rows
from compactbot.bot.store.sqlite.database import Database
from compactbot.bot.store.sqlite.memory import SELECT_ENTRIES_SQL, SELECT_REREAD_SQL
from compactbot.compression.memory import Memory

ID_BATCH = 500  # ids per IN (...) query, well under SQLite's variable limit


class SqliteTranscript:
    """The transcript reads of `SqliteStore`."""

    _db: Database

    async def load_active(self, session_id: int) -> list[StoredMessage]:
        found = await self._db.fetchall(
            "SELECT * FROM messages WHERE session_id = ? AND active = 1 ORDER BY seq", (session_id,)
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
            " WHERE s.chat_key = ? AND (? OR m.active = 1) ORDER BY m.session_id, m.seq",
            (chat_key, int(include_archived)),
        )
        return [rows.message_from_row(r) for r in found]

    async def count_archived(self, chat_key: str) -> int:
        found = await self._db.fetchall(
            "SELECT COUNT(*) FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE s.chat_key = ? AND m.active = 0",
            (chat_key,),
        )
        return int(found[0][0])

    async def load_messages(self, session_id: int, ids: Sequence[int]) -> list[StoredMessage]:
        wanted = list(dict.fromkeys(ids))
        found = []
        for start in range(0, len(wanted), ID_BATCH):
            batch = wanted[start : start + ID_BATCH]
            marks = ", ".join("?" * len(batch))
            found += await self._db.fetchall(
                f"SELECT * FROM messages WHERE session_id = ? AND id IN ({marks})",
                (session_id, *batch),
            )
        return sorted((rows.message_from_row(r) for r in found), key=lambda m: m.id)

    async def load_memory(self, session_id: int) -> Memory:
        entries = await self._db.fetchall(SELECT_ENTRIES_SQL, (session_id,))
        reread = await self._db.fetchall(SELECT_REREAD_SQL, (session_id,))
        return memory_from_rows(entries, reread)


# The session row always comes back (with NULL message columns when nothing is new); the
# (session_id, active, id) index makes this a range scan over the new rows only.
_APPENDED_SQL = (
    "SELECT s.version AS current_version, m.* FROM sessions s"
    " LEFT JOIN messages m ON m.session_id = s.id AND m.active = 1 AND m.id > ?"
    " WHERE s.id = ? ORDER BY m.seq"
)

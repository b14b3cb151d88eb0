"""Search on SQLite: the FTS5 index up to its watermark (bot/store/sqlite/fts.py) and a scan
of the rows above it, in one statement."""

from __future__ import annotations

from typing import Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import SearchHit
from compactbot.bot.store.hits import FETCH_FACTOR, clamp_limit, distinct_hits
from compactbot.bot.store.sqlite.database import Database
from compactbot.bot.store.sqlite.schema.migrations import TRIGRAM, indexed_text

TRIGRAM_MIN_CHARS = 3  # the trigram tokenizer cannot match anything shorter


_HIT_COLUMNS = (
    "m.id, m.session_id, m.role, m.author_name, m.content, m.content_format, m.created_at, m.active"
)
_FTS_SEARCH_SQL = (
    f"SELECT {_HIT_COLUMNS} FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
    " JOIN sessions s ON s.id = m.session_id"
    " WHERE messages_fts MATCH ? AND s.chat_key = ? ORDER BY m.id DESC LIMIT ?"
)
# The index up to the watermark and a scan of the rows above it (not yet indexed), read in one
# statement so both halves see the same watermark.
_INDEX_AND_TAIL_SEARCH_SQL = (
    f"SELECT {_HIT_COLUMNS} FROM messages_fts JOIN messages m ON m.id = messages_fts.rowid"
    " JOIN sessions s ON s.id = m.session_id WHERE messages_fts MATCH ? AND s.chat_key = ?"
    f" UNION ALL SELECT {_HIT_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
    " WHERE m.id > (SELECT upto FROM fts_indexed) AND s.chat_key = ?"
    # 1 is m.id: a compound statement orders by result column.
    f" AND ({indexed_text('m')}) LIKE ? ESCAPE '\\' ORDER BY 1 DESC LIMIT ?"
)
# The scan looks at the text the index holds: a list content's text parts, not its JSON.
_LIKE_SEARCH_SQL = (
    f"SELECT {_HIT_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"
    f" WHERE s.chat_key = ? AND ({indexed_text('m')}) LIKE ? ESCAPE '\\'"
    " ORDER BY m.id DESC LIMIT ?"
)


class SqliteSearch:
    """`TranscriptReads.search` of `SqliteStore`."""

    _db: Database

    async def search(self, chat_key: str, query: str, limit: int = 10) -> list[SearchHit]:
        """Messages of every session of the chat, archived included, newest first."""
        needle = query.strip()
        if not needle:
            return []
        limit = clamp_limit(limit)
        fetch = limit * FETCH_FACTOR
        found: list[Any] = []
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = f"%{escaped}%"
        if self._db.fts_tokenizer != TRIGRAM or len(needle) >= TRIGRAM_MIN_CHARS:
            phrase = '"' + needle.replace('"', '""') + '"'
            if self._db.fts_watermark:
                params: tuple[Any, ...] = (phrase, chat_key, chat_key, pattern, fetch)
                found = await self._db.fetchall(_INDEX_AND_TAIL_SEARCH_SQL, params)
            else:
                found = await self._db.fetchall(_FTS_SEARCH_SQL, (phrase, chat_key, fetch))
        if not found:
            # Short needles, and CJK substrings under unicode61, only a scan can find.
            found = await self._db.fetchall(_LIKE_SEARCH_SQL, (chat_key, pattern, fetch))
        return distinct_hits((rows.hit_from_row(r) for r in found), limit)

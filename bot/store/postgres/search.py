"""Search on PostgreSQL: `ILIKE` over `search_text`, served by its trigram index (`pg_trgm`)."""

from __future__ import annotations

from compactbot.bot.store import rows
from compactbot.bot.store.base import SearchHit
from compactbot.bot.store.hits import FETCH_FACTOR, clamp_limit, distinct_hits
from compactbot.bot.store.postgres.database import PostgresDatabase


class PostgresSearch:
    """`TranscriptReads.search` of `PostgresStore`."""

    _db: PostgresDatabase

    async def search(self, chat_key: str, query: str, limit: int = 10) -> list[SearchHit]:
        """Messages of every session of the chat, archived included, newest first."""
        needle = query.strip()
        if not needle:
            return []
        limit = clamp_limit(limit)
        # The trigram index serves ILIKE for needles of three characters or more; shorter
        # ones (and CJK under a ctype without CJK trigrams) are a scan of the chat's rows.
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        found = await self._db.fetchall(
            _SEARCH_SQL, (chat_key, f"%{escaped}%", limit * FETCH_FACTOR)
        )
        return distinct_hits((rows.hit_from_row(r) for r in found), limit)


_SEARCH_SQL = (
    "SELECT m.id, m.session_id, m.role, m.author_name, m.content, m.content_format,"
    " m.created_at, m.active FROM messages m JOIN sessions s ON s.id = m.session_id"
    " WHERE s.chat_key = $1 AND m.search_text ILIKE $2 ESCAPE '\\'"
    " ORDER BY m.id DESC LIMIT $3"
)

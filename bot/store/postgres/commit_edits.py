"""PostgreSQL: bot/store/sqlite/commit_edits.py in PostgreSQL's dialect (and `search_text`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from compactbot.bot.store import rows
from compactbot.bot.store.commit_edits import merged_copies, verbatim_copies
from compactbot.bot.store.merged_copies import refreshed_merge
from compactbot.bot.store.message_records import NewMessage
from compactbot.bot.store.postgres.rows import search_text_of

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

_LIVE_SPAN_SQL = (
    "SELECT count(*) FROM messages WHERE session_id = $1 AND active AND id = ANY($2::bigint[])"
)
_REFRESH_COPY_SQL = (
    "UPDATE messages c SET content = o.content, content_format = o.content_format,"
    " tokens = o.tokens, hints = o.hints, search_text = o.search_text"
    " FROM messages o WHERE o.id = $1 AND c.id = $2"
)


async def span_live(
    conn: PooledConnection, session_id: int, span_ids: Sequence[int] | None
) -> bool:
    """Every row the compaction read is still live: the version moved only by in-place changes."""
    if span_ids is None:
        return False
    wanted = sorted(set(span_ids))
    return int(await conn.fetchval(_LIVE_SPAN_SQL, session_id, wanted)) == len(wanted)


async def refresh_copies(
    conn: PooledConnection, compacted: Sequence[NewMessage], inserted_ids: Sequence[int]
) -> None:
    """Give the copies just inserted their originals' text as it is at the commit."""
    await conn.executemany(_REFRESH_COPY_SQL, verbatim_copies(compacted, inserted_ids))
    for message, original_id, copy_id in merged_copies(compacted, inserted_ids):
        row: Any = await conn.fetchrow(
            "SELECT content, content_format, tokens, tool_calls FROM messages WHERE id = $1",
            original_id,
        )
        found = refreshed_merge(message, row["content"], row["content_format"], row["tokens"])
        if found is None:
            continue
        rewrite, tokens = found
        content = rows.decode_content(rewrite.text, rewrite.content_format)
        await conn.execute(
            "UPDATE messages SET content = $1, content_format = $2, tokens = $3,"
            " search_text = $4, hints = NULL WHERE id = $5",
            rewrite.text,
            rewrite.content_format,
            tokens,
            search_text_of(content, row["tool_calls"]),
            copy_id,
        )

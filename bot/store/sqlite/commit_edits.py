"""SQLite: a compaction commit that absorbs the edits made while it ran (bot/store/commit_edits.py).

Edits bump the session's version, so the commit's compare-and-set alone would lose to a member
who edits a message every second. While every row the compaction read is still live, the
version moved only by in-place changes: the commit goes ahead and its copies are refreshed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import aiosqlite

from compactbot.bot.store.commit_edits import merged_copies, verbatim_copies
from compactbot.bot.store.merged_copies import refreshed_merge
from compactbot.bot.store.message_records import NewMessage
from compactbot.bot.store.sqlite.database import one

# How many of the rows a compaction read are still live (ids as one JSON array parameter).
_LIVE_SPAN_SQL = (
    "SELECT count(*) FROM messages WHERE session_id = ? AND active = 1"
    " AND id IN (SELECT value FROM json_each(?))"
)
_REFRESH_COPY_SQL = (
    "UPDATE messages SET (content, content_format, tokens, hints) ="
    " (SELECT content, content_format, tokens, hints FROM messages WHERE id = ?) WHERE id = ?"
)


async def span_live(
    conn: aiosqlite.Connection, session_id: int, span_ids: Sequence[int] | None
) -> bool:
    """Every row the compaction read is still live: the version moved only by in-place changes.

    Any other compaction archives the oldest live row, which every span starts with, and a
    delete takes its row out; either way the compaction read a transcript that is gone.
    """
    if span_ids is None:
        return False
    wanted = set(span_ids)
    row = await one(conn, _LIVE_SPAN_SQL, (session_id, json.dumps(sorted(wanted))))
    return int(row[0]) == len(wanted)


async def refresh_copies(
    conn: aiosqlite.Connection, compacted: Sequence[NewMessage], inserted_ids: Sequence[int]
) -> None:
    """Give the copies just inserted their originals' text as it is at the commit."""
    await conn.executemany(_REFRESH_COPY_SQL, verbatim_copies(compacted, inserted_ids))
    for message, original_id, copy_id in merged_copies(compacted, inserted_ids):
        row = await one(
            conn,
            "SELECT content, content_format, tokens FROM messages WHERE id = ?",
            (original_id,),
        )
        found = refreshed_merge(message, row["content"], row["content_format"], row["tokens"])
        if found is not None:
            rewrite, tokens = found
            await conn.execute(
                "UPDATE messages SET content = ?, content_format = ?, tokens = ?, hints = NULL"
                " WHERE id = ?",
                (rewrite.text, rewrite.content_format, tokens, copy_id),
            )

"""Messages by their platform id: lookups for reply context, edits and deletes (SQLite).

An edit rewrites the stored text (the index follows) and keeps the old text in
`message_revisions`; a delete blanks the text and takes the row out of the live transcript, so it
leaves search, tool results and every later summary input. A compaction's verbatim copies of a
message keep its platform id, so every copy changes with the original.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aiosqlite

from compactbot.bot.store import rows
from compactbot.bot.store.base import StoredMessage
from compactbot.bot.store.merged_copies import member_row, merged_rewrite, merged_tokens
from compactbot.bot.store.sqlite.database import Database, one

# A copy with a summary merged into it is the message only in part: the plain rows come first.
_FIND_SQL = (
    "SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id"
    " WHERE s.chat_key = ? AND m.platform_message_id = ?"
    " ORDER BY m.kind = 'summary', m.id DESC LIMIT 1"
)
# The message and its compaction copies, in every session of the chat.
_ALL_COPIES_SQL = (
    "SELECT m.id, m.session_id, m.active, m.tokens, m.content, m.content_format FROM messages m"
    " JOIN sessions s ON s.id = m.session_id"
    " WHERE s.chat_key = ? AND m.platform_message_id = ? ORDER BY m.id"
)
_REWRITE_MERGED_SQL = (
    "UPDATE messages SET content = ?, content_format = ?, tokens = ?, hints = NULL WHERE id = ?"
)


class SqliteRevisions:
    """`RevisionStore` on SQLite; `SqliteStore` inherits it."""

    _db: Database
    _clock: Callable[[], float]

    async def find_platform_message(
        self, chat_key: str, platform_message_id: str
    ) -> StoredMessage | None:
        """The chat's message with this platform id, archived rows included."""
        row = await self._db.fetchone(_FIND_SQL, (chat_key, platform_message_id))
        return rows.message_from_row(row) if row else None

    async def edit_platform_message(
        self,
        chat_key: str,
        platform_message_id: str,
        content: str,
        tokens: int,
        hints: int | None = None,
    ) -> bool:
        """Replace the message's text (and its copies'); the old text is kept as a revision."""
        now = self._clock()
        async with self._db.transaction() as conn:
            targets = await _with_copies(conn, chat_key, platform_message_id)
            if not targets:
                return False
            source = member_row(targets)
            await conn.execute(
                "INSERT INTO message_revisions(message_id, content, content_format, edited_at)"
                " VALUES (?, ?, ?, ?)",
                (source["id"], source["content"], source["content_format"], now),
            )
            for target in targets:
                after = tokens
                merged = merged_rewrite(target["content"], target["content_format"], content)
                if merged is None:
                    await conn.execute(
                        "UPDATE messages SET content = ?, content_format = 'text', tokens = ?,"
                        " hints = ? WHERE id = ?",
                        (content, tokens, hints, target["id"]),
                    )
                else:
                    after = merged_tokens(target["tokens"], source["tokens"], tokens)
                    await conn.execute(
                        _REWRITE_MERGED_SQL,
                        (merged.text, merged.content_format, after, target["id"]),
                    )
                if target["active"]:
                    await _adjust_session(conn, target["session_id"], after - target["tokens"], 0)
        return True

    async def set_message_content(
        self, message_id: int, content: Any, tokens: int, hints: int | None = None
    ) -> None:
        """The message's full content once its files were read (no revision: same message)."""
        text, content_format = rows.encode_content(content)
        async with self._db.transaction() as conn:
            row = await one(
                conn, "SELECT session_id, active, tokens FROM messages WHERE id = ?", (message_id,)
            )
            if row is None:
                return
            await conn.execute(
                "UPDATE messages SET content = ?, content_format = ?, tokens = ?, hints = ?"
                " WHERE id = ?",
                (text, content_format, tokens, hints, message_id),
            )
            if row["active"]:
                await _adjust_session(conn, row["session_id"], tokens - row["tokens"], 0)

    async def set_author_admin(self, message_id: int, admin: bool) -> None:
        """Whether its author is a chat admin, learnt after it was stored (SPEC 16)."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE messages SET author_admin = ? WHERE id = ?", (admin, message_id)
            )

    async def message_revisions(self, message_id: int) -> list[str]:
        """Earlier texts of an edited message, oldest first."""
        found = await self._db.fetchall(
            "SELECT content FROM message_revisions WHERE message_id = ? ORDER BY id",
            (message_id,),
        )
        return [str(r[0]) for r in found if r[0] is not None]


async def _with_copies(
    conn: aiosqlite.Connection, chat_key: str, platform_message_id: str
) -> list[Any]:
    return list(await conn.execute_fetchall(_ALL_COPIES_SQL, (chat_key, platform_message_id)))


async def _adjust_session(
    conn: aiosqlite.Connection, session_id: int, tokens: int, messages: int
) -> None:
    # A live row changed in place: a new version of the transcript, so in-memory copies of it
    # (the working set) reload and a compaction that read the old text does not commit it.
    await conn.execute(
        "UPDATE sessions SET active_tokens = active_tokens + ?,"
        " active_messages = active_messages + ?, version = version + 1 WHERE id = ?",
        (tokens, messages, session_id),
    )

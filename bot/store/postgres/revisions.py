"""Messages by their platform id on PostgreSQL: bot/store/sqlite/revisions.py in its dialect.

Besides what SQLite does, every rewrite of a row's text rewrites its `search_text`, so an edited
message is found by its new text and a deleted one is found no more. Each write first locks the
rows of the sessions it touches, in id order, like every other writer of a session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import StoredMessage
from compactbot.bot.store.merged_copies import Rewrite, member_row, merged_rewrite, merged_tokens
from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.postgres.rows import search_text_of

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

# A copy with a summary merged into it is the message only in part: the plain rows come first.
_FIND_SQL = (
    "SELECT m.* FROM messages m JOIN sessions s ON s.id = m.session_id"
    " WHERE s.chat_key = $1 AND m.platform_message_id = $2"
    " ORDER BY m.kind = 'summary', m.id DESC LIMIT 1"
)
# The message and its compaction copies, in every session of the chat.
_ALL_COPIES_SQL = (
    "SELECT m.id, m.session_id, m.active, m.tokens, m.tool_calls, m.content, m.content_format"
    " FROM messages m"
    " JOIN sessions s ON s.id = m.session_id"
    " WHERE s.chat_key = $1 AND m.platform_message_id = $2 ORDER BY m.id"
)
# A live row changed in place is a new version of the transcript: in-memory copies of it (the
# working set) reload, and a compaction that read the old text is fenced out.
_ADJUST_SESSION_SQL = (
    "UPDATE sessions SET active_tokens = active_tokens + $1,"
    " active_messages = active_messages + $2, version = version + 1 WHERE id = $3"
)


class PostgresRevisions:
    """`RevisionStore` on PostgreSQL; `PostgresStore` inherits it."""

    _db: PostgresDatabase
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
            targets = await _locked_copies(conn, chat_key, platform_message_id)
            if not targets:
                return False
            source = member_row(targets)
            await conn.execute(
                "INSERT INTO message_revisions(message_id, content, content_format, edited_at)"
                " VALUES ($1, $2, $3, $4)",
                source["id"],
                source["content"],
                source["content_format"],
                now,
            )
            for target in targets:
                after = tokens
                merged = merged_rewrite(target["content"], target["content_format"], content)
                if merged is None:
                    await conn.execute(
                        "UPDATE messages SET content = $1, content_format = 'text', tokens = $2,"
                        " search_text = $3, hints = $4 WHERE id = $5",
                        content,
                        tokens,
                        search_text_of(content, target["tool_calls"]),
                        hints,
                        target["id"],
                    )
                else:
                    after = merged_tokens(target["tokens"], source["tokens"], tokens)
                    await _rewrite_merged(conn, target, merged, after)
                if target["active"]:
                    await conn.execute(
                        _ADJUST_SESSION_SQL, after - target["tokens"], 0, target["session_id"]
                    )
        return True

    async def set_message_content(
        self, message_id: int, content: Any, tokens: int, hints: int | None = None
    ) -> None:
        """The message's full content once its files were read (no revision: same message)."""
        text, content_format = rows.encode_content(content)
        async with self._db.transaction() as conn:
            session_id = await conn.fetchval(
                "SELECT session_id FROM messages WHERE id = $1", message_id
            )
            if session_id is None:
                return
            await _lock_sessions(conn, [session_id])
            row: Any = await conn.fetchrow(
                "SELECT active, tokens, tool_calls FROM messages WHERE id = $1", message_id
            )
            await conn.execute(
                "UPDATE messages SET content = $1, content_format = $2, tokens = $3,"
                " search_text = $4, hints = $5 WHERE id = $6",
                text,
                content_format,
                tokens,
                search_text_of(content, row["tool_calls"]),
                hints,
                message_id,
            )
            if row["active"]:
                await conn.execute(_ADJUST_SESSION_SQL, tokens - row["tokens"], 0, session_id)

    async def set_author_admin(self, message_id: int, admin: bool) -> None:
        """Whether its author is a chat admin, learnt after it was stored (SPEC 16)."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "UPDATE messages SET author_admin = $1 WHERE id = $2", admin, message_id
            )

    async def message_revisions(self, message_id: int) -> list[str]:
        """Earlier texts of an edited message, oldest first."""
        found = await self._db.fetchall(
            "SELECT content FROM message_revisions WHERE message_id = $1 ORDER BY id",
            (message_id,),
        )
        return [str(r[0]) for r in found if r[0] is not None]


async def _rewrite_merged(
    conn: PooledConnection, target: Any, merged: Rewrite, tokens: int
) -> None:
    content = rows.decode_content(merged.text, merged.content_format)
    await conn.execute(
        "UPDATE messages SET content = $1, content_format = $2, tokens = $3,"
        " search_text = $4, hints = NULL WHERE id = $5",
        merged.text,
        merged.content_format,
        tokens,
        search_text_of(content, target["tool_calls"]),
        target["id"],
    )


async def _locked_copies(
    conn: PooledConnection, chat_key: str, platform_message_id: str
) -> list[Any]:
    """The message's copies, read again once their sessions' rows are locked."""
    found = await conn.fetch(_ALL_COPIES_SQL, chat_key, platform_message_id)
    if not found:
        return []
    await _lock_sessions(conn, [r["session_id"] for r in found])
    return list(await conn.fetch(_ALL_COPIES_SQL, chat_key, platform_message_id))


async def _lock_sessions(conn: PooledConnection, session_ids: Sequence[int]) -> None:
    # In id order, so two writers of the same sessions never wait on each other crosswise.
    await conn.execute(
        "SELECT 1 FROM sessions WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE",
        sorted(set(session_ids)),
    )

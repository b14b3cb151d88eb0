"""`ForgetStore` on PostgreSQL: bot/store/sqlite/forget.py in PostgreSQL's dialect.

Deleting a row takes its `search_text` (the trigram index) with it. The chat's session rows are
locked first, in id order, like every other writer of a session.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from compactbot.bot.store.forgetting import REWRITTEN_ROLES, ForgetPlan, TargetRow, TextRow, plan
from compactbot.bot.store.memory_rows import ENTRY_COLUMNS, memory_from_rows
from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.postgres.memory import write_memory
from compactbot.bot.store.postgres.queue.queue_scrub import FORGET_VACUUMED, scrub_queues
from compactbot.bot.store.postgres.rows import search_text_of
from compactbot.bot.store.reply_quotes import QUOTE_MARK
from compactbot.bot.store.rows import decode_content
from compactbot.compression.transcript import content_text

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

_ROW_COLUMNS = "m.id, m.session_id, m.active, m.tokens, m.content, m.content_format, m.tool_calls"
_ENTRIES_SQL = f"SELECT {ENTRY_COLUMNS} FROM memory_entries WHERE session_id = $1 ORDER BY entry_id"
_CHAT_ROWS = f"SELECT {_ROW_COLUMNS} FROM messages m JOIN sessions s ON s.id = m.session_id"


class PostgresForget:
    """The `ForgetStore` methods; `PostgresStore` inherits them."""

    _db: PostgresDatabase
    _clock: Callable[[], float]

    async def forget_messages(
        self, chat_key: str, platform_message_ids: Sequence[str], *, author_id: str | None = None
    ) -> int:
        wanted = list(dict.fromkeys(platform_message_ids))
        if not wanted:
            return 0
        if author_id is not None:
            where = "m.platform_message_id = ANY($2::text[]) AND m.author_id = $3"
            return await self._forget(chat_key, where, (wanted, author_id))
        return await self._forget(chat_key, "m.platform_message_id = ANY($2::text[])", (wanted,))

    async def forget_rows(self, chat_key: str, row_ids: Sequence[int]) -> int:
        wanted = list(dict.fromkeys(row_ids))
        if not wanted:
            return 0
        # The rows and their copies: a compaction's copy keeps the row's role, time and text.
        where = (
            "EXISTS (SELECT 1 FROM messages t WHERE t.id = ANY($2::bigint[]) AND t.role = m.role"
            " AND t.created_at = m.created_at AND t.content IS NOT DISTINCT FROM m.content)"
        )
        return await self._forget(chat_key, where, (wanted,))

    async def forget_member(self, chat_key: str, author_id: str) -> int:
        return await self._forget(chat_key, "m.author_id = $2", (author_id,))

    async def forget_before(self, chat_key: str, cutoff: float) -> int:
        return await self._forget(chat_key, "m.created_at < $2", (cutoff,))

    async def count_member_messages(self, chat_key: str, author_id: str) -> int:
        row = await self._db.fetchone(
            "SELECT count(DISTINCT coalesce(m.platform_message_id, m.id::text)) FROM messages m"
            " JOIN sessions s ON s.id = m.session_id WHERE s.chat_key = $1 AND m.author_id = $2",
            (chat_key, author_id),
        )
        return int(row[0])

    async def _forget(self, chat_key: str, where: str, params: Sequence[Any]) -> int:
        async with self._db.transaction() as conn:
            sessions = await conn.fetch(
                "SELECT id, previous_summary FROM sessions WHERE chat_key = $1 ORDER BY id"
                " FOR UPDATE",
                chat_key,
            )
            found = await conn.fetch(
                f"{_CHAT_ROWS} WHERE s.chat_key = $1 AND {where}", chat_key, *params
            )
            if not found:
                return 0
            targets = [
                TargetRow(
                    r[0], r[1], r[2], r[3], content_text(decode_content(r[4], r[5])), r[4], r[5]
                )
                for r in found
            ]
            memories = {}
            for session in sessions:
                sid = session["id"]
                memories[sid] = memory_from_rows(
                    await conn.fetch(_ENTRIES_SQL, sid),
                    await conn.fetch(
                        "SELECT message_id FROM memory_reread WHERE session_id = $1"
                        " ORDER BY position",
                        sid,
                    ),
                )
            texts = await conn.fetch(
                f"SELECT {_ROW_COLUMNS}, m.role = 'user' AND m.kind = 'message' FROM messages m"
                " JOIN sessions s ON s.id = m.session_id WHERE s.chat_key = $1"
                " AND m.content IS NOT NULL AND (m.kind = 'summary'"
                " OR m.role = ANY($2::text[]) OR strpos(m.content, $3) > 0)",
                chat_key,
                list(REWRITTEN_ROLES),
                QUOTE_MARK,
            )
            tool_calls = {r[0]: r[6] for r in texts}
            changes = plan(
                targets,
                memories,
                [TextRow(r[0], r[1], r[2], r[3], r[4], r[5], r[7]) for r in texts],
                {s["id"]: s["previous_summary"] for s in sessions},
            )
            await _apply(conn, changes, tool_calls)
            await scrub_queues(conn, chat_key, [t.id for t in targets], changes)
        # Dead row versions keep the text in the table until a vacuum prunes them.
        await self._db.vacuum(FORGET_VACUUMED)
        return len(targets)


async def _apply(
    conn: PooledConnection, changes: ForgetPlan, tool_calls: dict[int, str | None]
) -> None:
    await conn.execute(
        "DELETE FROM message_revisions WHERE message_id = ANY($1::bigint[])", changes.deleted
    )
    await conn.execute("DELETE FROM messages WHERE id = ANY($1::bigint[])", changes.deleted)
    for session_id, memory in changes.memories.items():
        await write_memory(conn, session_id, memory)
    for r in changes.rewrites:
        search = search_text_of(decode_content(r.content, r.content_format), tool_calls.get(r.id))
        await conn.execute(
            "UPDATE messages SET content = $1, content_format = $2, tokens = $3, hints = NULL,"
            " search_text = $4 WHERE id = $5",
            r.content,
            r.content_format,
            r.tokens,
            search,
            r.id,
        )
    detached = [r.id for r in changes.rewrites if r.detach]
    await conn.execute(
        "DELETE FROM message_revisions WHERE message_id = ANY($1::bigint[])", detached
    )
    await conn.execute(
        "UPDATE messages SET platform_message_id = NULL, author_id = NULL, author_name = NULL"
        " WHERE id = ANY($1::bigint[])",
        detached,
    )
    for session_id, summary in changes.previous_summaries.items():
        await conn.execute(
            "UPDATE sessions SET previous_summary = $1 WHERE id = $2", summary, session_id
        )
    # A new version: working sets reload, and a compaction that read the old text is fenced out.
    for session_id in sorted(changes.sessions):
        tokens, count = changes.totals.get(session_id, (0, 0))
        await conn.execute(
            "UPDATE sessions SET active_tokens = greatest(0, active_tokens - $1),"
            " active_messages = greatest(0, active_messages - $2), version = version + 1"
            " WHERE id = $3",
            tokens,
            count,
            session_id,
        )

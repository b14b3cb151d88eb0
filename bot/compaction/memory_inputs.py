"""What a compaction hands the compressor about the session's memory (SPEC 6.9, 6.11)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compactbot.bot.store.base import StoredMessage
from compactbot.bot.store.protocols.transcript_store import TranscriptReads
from compactbot.compression.memory import Memory, MessageSource


async def memory_inputs(
    store: TranscriptReads, session_id: int, memory: Memory, considered: Sequence[StoredMessage]
) -> dict[str, Any]:
    """`compress()` keyword arguments: the memory, which rows are summaries (by stored kind,
    never by wording), each row's source (id, time, a member's author) and the archived rows
    marked for re-reading."""
    wanted = [int(i) for i in memory.reread if i.isdigit()]
    archived = await store.load_messages(session_id, wanted) if wanted else []
    return {
        "memory": memory,
        # The system prompt comes first in the compressor's list and is never a summary.
        "kinds": ["message", *(m.kind for m in considered)],
        "sources": [None, *map(source_of, considered)],
        "reread": {str(m.id): _archived(m) for m in archived},
    }


def source_of(message: StoredMessage) -> MessageSource:
    """Where the row is stored and, for a member's row, who wrote it (SPEC 16): the bot's own
    rows, tool results and stored summaries carry no author."""
    if message.role != "user" or message.kind != "message" or not message.author_id:
        return MessageSource(str(message.id), message.created_at)
    return MessageSource(
        str(message.id),
        message.created_at,
        message.author_id,
        message.author_name,
        # Unknown is no: a member's rule the bot cannot vouch for stays that member's request.
        may_set_rules=message.author_admin is True,
    )


def _archived(message: StoredMessage) -> dict[str, Any]:
    """An archived row as `compress()` reads it again: its wire fields, time and author."""
    source = source_of(message)
    found = {**message.to_openai(), "timestamp": message.created_at}
    if source.author_id:
        found |= {"author_id": source.author_id, "author": source.author}
    return found

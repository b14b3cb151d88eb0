"""What a compaction hands the compressor about the session's memory (SPEC 6.9, 6.11)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compactbot.bot.store.base import StoredMessage
from compactbot.bot.store.transcript_store import TranscriptReads
from compactbot.compression.memory import Memory, MessageSource


async def memory_inputs(
    store: TranscriptReads, session_id: int, memory: Memory, considered: Sequence[StoredMessage]
) -> dict[str, Any]:
    """`compress()` keyword arguments: the memory, which rows are summaries (by stored kind,
    never by wording), each row's id and time, and the archived rows marked for re-reading."""
    wanted = [int(i) for i in memory.reread if i.isdigit()]
    archived = await store.load_messages(session_id, wanted) if wanted else []
    reread = {str(m.id): {**m.to_openai(), "timestamp": m.created_at} for m in archived}
    return {
        "memory": memory,
        # The system prompt comes first in the compressor's list and is never a summary.
        "kinds": ["message", *(m.kind for m in considered)],
        "sources": [None, *(MessageSource(str(m.id), m.created_at) for m in considered)],
        "reread": reread,
    }

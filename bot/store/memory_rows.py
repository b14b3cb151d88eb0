"""The session memory's rows (migration 3; `author_ids`, migration 16) as both backends map them;
each writes them whole inside the compaction's transaction (bot/store/sqlite/memory.py,
bot/store/postgres/memory.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from compactbot.compression.memory import (
    ENTRY_KINDS,
    ENTRY_ORIGINS,
    ENTRY_STATUSES,
    EntryKind,
    EntryOrigin,
    EntryStatus,
    Memory,
    MemoryEntry,
)

ENTRY_COLUMNS = (
    "session_id, entry_id, kind, text, subject, speaker, date, sources, status, owner, due,"
    " answer, closed_on, superseded_by, origin, author_ids"
)


def memory_from_rows(entries: Sequence[Any], reread: Sequence[Any]) -> Memory:
    return Memory(tuple(_entry(row) for row in entries), tuple(str(r[0]) for r in reread))


def entry_params(session_id: int, e: MemoryEntry) -> tuple[Any, ...]:
    """An entry as `ENTRY_COLUMNS` values (shared with the PostgreSQL store)."""
    return (
        session_id, e.id, e.kind, e.text, e.subject, e.speaker, e.date, json.dumps(e.sources),
        e.status, e.owner, e.due, e.answer, e.closed_on, e.superseded_by, e.origin,
        json.dumps(e.author_ids),
    )  # fmt: skip


def _entry(row: Any) -> MemoryEntry:
    kind = row[2] if row[2] in ENTRY_KINDS else "narrative"
    status = row[8] if row[8] in ENTRY_STATUSES else "current"
    return MemoryEntry(
        id=int(row[1]),
        kind=cast(EntryKind, kind),
        text=row[3],
        subject=row[4],
        speaker=row[5],
        date=row[6],
        sources=tuple(str(s) for s in json.loads(row[7] or "[]")),
        status=cast(EntryStatus, status),
        owner=row[9],
        due=row[10],
        answer=row[11],
        closed_on=row[12],
        superseded_by=row[13],
        origin=cast(EntryOrigin, row[14] if row[14] in ENTRY_ORIGINS else "summarizer"),
        author_ids=tuple(str(a) for a in json.loads(row[15] or "[]")),
    )

"""The agent's `recall` tool: look up the chat's memory, also the entries the summary omits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compactbot.compression.memory import ENTRY_KINDS, Memory, MemoryEntry

DEFAULT_RECALL_LIMIT = 10
MAX_RECALL_LIMIT = 30


def recall(
    memory: Memory, terms: Sequence[str], *, kind: str | None, limit: int
) -> list[dict[str, Any]]:
    """Entries holding every term (any case); current ones first, then the newest."""
    wanted = [term.lower() for term in terms]
    found = [
        entry
        for entry in memory.entries
        if (kind is None or entry.kind == kind) and all(w in _haystack(entry) for w in wanted)
    ]
    found.sort(key=lambda e: (e.shown, e.id), reverse=True)
    return [entry_json(entry) for entry in found[:limit]]


def valid_kind(value: Any) -> str | None:
    return value if isinstance(value, str) and value in ENTRY_KINDS else None


def entry_json(entry: MemoryEntry) -> dict[str, Any]:
    """One entry as the agent (and `compactbot history --memory`) sees it."""
    out: dict[str, Any] = {"id": entry.id, "kind": entry.kind, "text": entry.text}
    for key in ("subject", "speaker", "date", "owner", "due", "answer", "closed_on"):
        value = getattr(entry, key)
        if value:
            out[key] = value
    out["status"] = entry.status
    if entry.superseded_by is not None:
        out["superseded_by"] = entry.superseded_by
    if entry.sources:
        out["source_message_ids"] = list(entry.sources)
    return out


def _haystack(entry: MemoryEntry) -> str:
    return " ".join(p for p in (entry.text, entry.subject, entry.speaker, entry.owner) if p).lower()

"""The agent's `recall` tool: look up the chat's memory, also the entries the summary omits.

Terms match by stem ("rules" finds a rule, "deploys" finds "deploy"), and an entry's kind is
part of what it says: "what are our rules?" finds the rules and the pins."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from compactbot.bot.turns.search_words import stem
from compactbot.compression.memory import ENTRY_KINDS, Memory, MemoryEntry

DEFAULT_RECALL_LIMIT = 10
MAX_RECALL_LIMIT = 30
# A pin is one of the chat's rules (SPEC 16): what a search for rules or pins finds.
PIN_WORDS = "pin pinned rule"
_WORD = re.compile(r"\w+")


def recall(
    memory: Memory, terms: Sequence[str], *, kind: str | None, limit: int
) -> list[dict[str, Any]]:
    """Entries holding every term (any case); current ones first, then the newest."""
    found = [
        entry
        for entry in memory.entries
        if (kind is None or entry.kind == kind) and matches(terms, _haystack(entry))
    ]
    found.sort(key=lambda e: (e.shown, e.id), reverse=True)
    return [entry_json(entry) for entry in found[:limit]]


def recall_pins(pins: Sequence[str], terms: Sequence[str]) -> list[str]:
    """The pins holding every term; a pin counts as a rule."""
    return [pin for pin in pins if matches(terms, f"{PIN_WORDS} {pin}".lower())]


def matches(terms: Sequence[str], haystack: str) -> bool:
    """Every term is in the lowered `haystack`, as written or by its stem."""
    stems: set[str] | None = None
    for term in terms:
        wanted = term.lower()
        if wanted in haystack:
            continue
        if stems is None:
            stems = {stem(word) for word in _WORD.findall(haystack)}
        if stem(wanted) not in stems:
            return False
    return True


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
    parts = (entry.kind, entry.text, entry.subject, entry.speaker, entry.owner)
    return " ".join(p for p in parts if p).lower()

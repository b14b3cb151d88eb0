"""Per-item probes: is a planted value in what the model sees without a tool (the rendered
context), and does `recall` over the memory find it with the words a member would ask with?
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench.planted_items import Planted
from compactbot.bot.turns.recall import DEFAULT_RECALL_LIMIT, recall
from compactbot.compression import Memory


def message_text(message: Mapping[str, Any]) -> str:
    """The text a model reads in one message: its content and any tool-call arguments."""
    content = message.get("content")
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [str(p.get("text", "")) for p in content if isinstance(p, Mapping)]
    else:
        parts = []
    for call in message.get("tool_calls") or ():
        parts.append(json.dumps(call, ensure_ascii=False))
    return "\n".join(parts)


def normalised(text: str) -> str:
    """Lower case with runs of white space as one space (GateMem's scoring, and ours)."""
    return " ".join(text.lower().split())


@dataclass(frozen=True, slots=True)
class Context:
    """A transcript flattened to normalised lines once, so many probes can search it."""

    lines: tuple[str, ...]
    text: str

    @classmethod
    def of(cls, messages: Sequence[Mapping[str, Any]]) -> Context:
        raw = "\n".join(message_text(m) for m in messages)
        lines = tuple(normalised(line) for line in raw.splitlines() if line.strip())
        return cls(lines, "\n".join(lines))


def in_context(item: Planted, context: Context) -> bool:
    """The value is there (with its member's name on the same line for a preference)."""
    value = normalised(item.value)
    if value not in context.text:
        return False
    if not item.needs_speaker:
        return True
    speaker = item.speaker.lower()
    return any(value in line and speaker in line for line in context.lines)


def via_recall(item: Planted, memory: Memory, limit: int = DEFAULT_RECALL_LIMIT) -> bool:
    """What `recall` returns for the ask terms holds the value (current or superseded entries)."""
    found = recall(memory, list(item.ask), kind=None, limit=limit)
    text = normalised(" ".join(str(v) for entry in found for v in entry.values()))
    return normalised(item.value) in text

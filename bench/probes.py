"""Per-item probes on the context a model would see (anchors C1): is the exact value there,
on one line with its entity (and its speaker, for who-said-what), and is an update current?
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from bench.planted_items import Planted
from compactbot.compression.messages import text_of

Verdict = Literal["kept", "lost", "misattributed", "unbound", "stale"]


@dataclass(frozen=True, slots=True)
class Context:
    """A transcript flattened to text once, so many probes can search it."""

    text: str

    @classmethod
    def of(cls, messages: Sequence[Mapping[str, Any]]) -> Context:
        parts = []
        for message in messages:
            parts.append(text_of(message))
            for call in message.get("tool_calls") or ():
                parts.append(json.dumps(call, ensure_ascii=False))
        return cls("\n".join(parts))

    def lines_with(self, value: str) -> list[tuple[int, str]]:
        """(position, line) for every line holding `value`."""
        found = []
        start = self.text.find(value)
        while start >= 0:
            left = self.text.rfind("\n", 0, start) + 1
            right = self.text.find("\n", start)
            right = len(self.text) if right < 0 else right
            found.append((start, self.text[left:right]))
            start = self.text.find(value, right)
        return found

    def last(self, value: str) -> int:
        return self.text.rfind(value)


@lru_cache(maxsize=4096)
def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w]){re.escape(name)}(?![\w])")


def probe(item: Planted, context: Context) -> Verdict:
    """One item's state in `context`."""
    lines = context.lines_with(item.value)
    if item.stale_value is not None:
        old = context.last(item.stale_value)
        if old >= 0 and (not lines or old > context.last(item.value)):
            return "stale"
    if not lines:
        return "lost"
    bound = [line for _, line in lines if _bound(item, line)]
    if not bound:
        return "unbound"
    if item.needs_speaker and not any(_word(item.speaker).search(line) for line in bound):
        return "misattributed"
    return "kept"


def _bound(item: Planted, line: str) -> bool:
    lowered = line.lower()
    return all(word.lower() in lowered for word in item.together)


def pin_intact(pin: str, context: Context) -> bool:
    return pin in context.text

"""Plain truncation: the system prompt plus the newest messages that fit a token budget."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compactbot.compression.tokens import counter_for


def newest_that_fit(
    messages: Sequence[Mapping[str, Any]], counts: Sequence[int], budget: int
) -> int:
    """How many of the newest messages after the system prompt to keep within `budget`.

    The kept part starts at a user message (a provider rejects a transcript that starts with a
    tool result or holds no user message), so when even the newest turn is over budget it is
    kept whole, as a compressor keeps the last user message.
    """
    head = 1 if messages and messages[0].get("role") == "system" else 0
    room = budget - (counts[0] if head else 0)
    cut = len(messages)
    while cut > head and counts[cut - 1] <= room:
        cut -= 1
        room -= counts[cut]
    users = [i for i in range(head, len(messages)) if messages[i].get("role") == "user"]
    later = [i for i in users if i >= cut]
    cut = later[0] if later else (users[-1] if users else cut)
    return len(messages) - cut


def truncate(transcript: Sequence[Mapping[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The system prompt plus the newest whole turns within `budget` tokens."""
    counter = counter_for(None)
    counts = [counter.count_message(m) for m in transcript]
    keep = newest_that_fit(transcript, counts, budget)
    head = [dict(transcript[0])] if transcript and transcript[0].get("role") == "system" else []
    return head + [dict(m) for m in transcript[len(transcript) - keep :]]

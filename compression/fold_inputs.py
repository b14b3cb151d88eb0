"""What every summarizer call of one compaction is given: the bounds, the focus, re-read spans."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from compactbot.compression.fold import Ask, Span
from compactbot.compression.memory import Memory, MessageSource, apply_update
from compactbot.compression.memory_format import format_current, parse_reply
from compactbot.compression.provenance import member_authors
from compactbot.compression.redact import redact
from compactbot.compression.summary_input import derive_focus

# The summarizer input must fit the summary model: the template costs about this many tokens,
# and rendering adds labels, so only 85 % of the remaining room is filled.
SUMMARY_PROMPT_OVERHEAD_TOKENS = 1_200
INPUT_SAFETY_MARGIN = 0.85
MIN_SUMMARY_INPUT_CHARS = 4_000
# The current entries shown to the summarizer take at most this share of its input room, with
# room for what the compaction's earlier chunks add.
MEMORY_INPUT_SHARE = 0.25
MEMORY_GROWTH_CHARS = 2_000


def build_ask(
    memory: Memory,
    working: Sequence[Mapping[str, Any]],
    *,
    focus_topic: str | None,
    budget_tokens: int,
    today: dt.date,
    pins: Sequence[str],
    context_length: int,
    chars_per_token: float,
    language: str | None = None,
) -> Ask:
    """Bounds per call so prompt, entries and answer fit the summary model's window."""
    # derive_focus() redacts what it quotes; a caller's topic is redacted here.
    given = focus_topic if focus_topic and focus_topic.strip() else None
    focus = redact(given) if given else derive_focus(working)
    room_tokens = context_length - budget_tokens - SUMMARY_PROMPT_OVERHEAD_TOKENS
    room = max(MIN_SUMMARY_INPUT_CHARS, int(room_tokens * chars_per_token * INPUT_SAFETY_MARGIN))
    memory_chars = int(room * MEMORY_INPUT_SHARE)
    shown = format_current(memory, max_chars=memory_chars) or ""
    memory_room = min(memory_chars, len(shown) + MEMORY_GROWTH_CHARS)
    return Ask(
        focus,
        budget_tokens,
        today,
        tuple(pins),
        input_chars=max(MIN_SUMMARY_INPUT_CHARS, room - memory_room),
        memory_chars=memory_room,
        language=language,
    )


def reread_span(memory: Memory, archived: Mapping[str, Mapping[str, Any]] | None) -> Span | None:
    """The archived messages the memory marked for re-reading, those the caller could load
    (each may carry its "timestamp", "author_id", "author" and "may_set_rules" besides the
    wire fields)."""
    pending = [(i, archived[i]) for i in memory.reread if archived and i in archived]
    if not pending:
        return None
    turns = [dict(message) for _, message in pending]
    sources = [
        MessageSource(
            i,
            _at(message),
            _text(message, "author_id"),
            _text(message, "author"),
            may_set_rules=message.get("may_set_rules") is not False,
        )
        for i, message in pending
    ]
    return Span(
        turns,
        [i for i, _ in pending],
        [source.at for source in sources],
        authors=member_authors(turns, sources),
    )


def legacy_memory(previous_summary: str, today: dt.date) -> Memory:
    """The entries of a summary written before the memory existed (or by a caller without one)."""
    legacy = parse_reply(redact(previous_summary), [], [], today)
    return apply_update(Memory(), legacy) if legacy else Memory()


def chars_per_token(chars: int, tokens: int) -> float:
    """This middle's own density (its contents' characters per token), so CJK or code is
    bounded as tightly as English prose."""
    return max(1.0, chars / tokens) if tokens > 0 else 3.0


def _text(message: Mapping[str, Any], key: str) -> str | None:
    value = message.get(key)
    return value if isinstance(value, str) and value else None


def _at(message: Mapping[str, Any]) -> float | None:
    value = message.get("timestamp")
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

"""The summarizer's chunks of a span in one pass: each turn prepared, sized and attributed once.

Equal to `chunk_turns(summary_turns(turns), max_chars)` with `participants()` of each chunk
(tests/compression/test_summary_chunks.py holds them together). A turn's size is its rendered
record's: JSON escapes make it more than its text's length, by as much as the text needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.compression.extract import too_light_for_backup
from compactbot.compression.message_hints import (
    CALLS_CLEAN,
    SHOWN_AS_IS,
    SHOWN_LIGHT,
    SUMMARY_CLEAN,
    view_hint,
)
from compactbot.compression.redact import redact
from compactbot.compression.summary_input import (
    BODY_LIMIT_CHARS,
    prepare_call,
    rendered_chars,
    shrink_to,
    truncate_body,
)
from compactbot.compression.transcript import (
    content_text,
    speaker_of,
    speaker_of_opening,
    strip_think,
)


@dataclass(frozen=True, slots=True)
class Chunk:
    """`turns[start:end]` of the span, prepared, and the speakers of its user turns in order."""

    start: int
    end: int
    turns: list[Mapping[str, Any]]
    participants: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SummaryView:
    """Every turn of a span as the summarizer gets it, its rendered size and participant name,
    and the characters of the span's own contents (what `chars_per_token` reads)."""

    turns: list[Mapping[str, Any]]
    sizes: list[int]
    speakers: list[str | None]
    chars: int
    # Per turn: the caller's hints, or without them what the view found (SHOWN_LIGHT).
    hints: Sequence[int | None]


def summary_view(
    turns: Sequence[Mapping[str, Any]], hints: Sequence[int | None] | None = None
) -> SummaryView:
    """One pass over the span; `hints[i]` may vouch that turn i is shown as it is
    (SHOWN_AS_IS: no copy) or that its text needs no redaction (SUMMARY_CLEAN: no gate).
    Without hints, `view_hint()` finds out as much of each turn."""
    prepared: list[Mapping[str, Any]] = []
    sizes: list[int] = []
    names: list[str | None] = []
    speakers: dict[str, str | None] = {}
    chars = 0
    # Bound once: this loop runs once per message of the span.
    add_turn, add_size, add_name = prepared.append, sizes.append, names.append
    known = list(map(view_hint, turns)) if hints is None else hints
    for message, hint in zip(turns, known, strict=True):
        # Inline, the common turn: a chat line shown as it is (no copy: nothing of the
        # summarizer's changes it); anything else takes the general path.
        if hint is not None and hint & SHOWN_AS_IS:
            content = message["content"]
            add_turn(message)
            chars += len(content)
            add_size(rendered_chars(message))
            add_name(
                speaker_of_opening(content, speakers) if message.get("role") == "user" else None
            )
            continue
        clean = hint is not None and bool(hint & SUMMARY_CLEAN)
        calls_clean = hint is not None and bool(hint & CALLS_CLEAN)
        turn, size, speaker, length = _prepared(message, clean, calls_clean, speakers)
        add_turn(turn)
        add_size(size)
        add_name(speaker)
        chars += length
    if hints is None:  # the backup of exact values then skips light turns as stored hints let it
        hints = [
            (SHOWN_LIGHT if too_light_for_backup(turn) else 0) if hint is None else hint
            for hint, turn in zip(known, prepared, strict=True)
        ]
    return SummaryView(prepared, sizes, names, chars, hints)


def view_chunks(view: SummaryView, max_chars: int) -> list[Chunk]:
    """Consecutive chunks of the view within `max_chars` rendered (SPEC 6.5)."""
    if view.sizes and sum(view.sizes) <= max_chars:  # the whole span in one call, as it is
        named = tuple(dict.fromkeys(filter(None, view.speakers)))
        return [Chunk(0, len(view.turns), list(view.turns), named)]
    chunks: list[Chunk] = []
    current: list[Mapping[str, Any]] = []
    names: dict[str, None] = {}
    used = start = 0
    for index, (turn, size, speaker) in enumerate(
        zip(view.turns, view.sizes, view.speakers, strict=True)
    ):
        if current and used + size > max_chars:
            chunks.append(Chunk(start, index, current, tuple(names)))
            current, names, used, start = [], {}, 0, index
        if size > max_chars:
            turn = shrink_to(turn, max_chars)
            size = rendered_chars(turn)
            speaker = _speaker(turn)
        current.append(turn)
        used += size
        if speaker:
            names.setdefault(speaker)
    if current:
        chunks.append(Chunk(start, len(view.turns), current, tuple(names)))
    return chunks


def summary_chunks(
    turns: Sequence[Mapping[str, Any]],
    max_chars: int,
    hints: Sequence[int | None] | None = None,
) -> list[Chunk]:
    """Consecutive chunks within `max_chars` rendered, each turn prepared once."""
    return view_chunks(summary_view(turns, hints), max_chars)


def _prepared(
    message: Mapping[str, Any], clean: bool, calls_clean: bool, speakers: dict[str, str | None]
) -> tuple[dict[str, Any], int, str | None, int]:
    """`summary_turns`' copy of one message, its `rendered_chars`, its participant name and
    the characters of its content (`chars_per_token`'s measure)."""
    content = message.get("content")
    if type(content) is str:
        text = content
        length = len(content)
    else:
        text = content_text(content)
        length = len(str(content or ""))
    role = message.get("role")
    if role == "assistant":
        # strip_think(), inline: most replies hold no "<" and are only stripped.
        text = strip_think(text) if "<" in text else text.strip()
    if not clean:
        text = redact(text)
    if len(text) > BODY_LIMIT_CHARS:
        text = truncate_body(text)
    turn = dict(message)
    calls = turn.pop("tool_calls", None)
    turn["content"] = text
    if isinstance(calls, list) and calls:
        turn["tool_calls"] = [prepare_call(call, calls_clean) for call in calls]
    # participants() reads the text left-stripped (the rendering reads it fully stripped).
    speaker = speaker_of_opening(text.lstrip(), speakers) if role == "user" and text else None
    return turn, rendered_chars(turn), speaker, length


def _speaker(turn: Mapping[str, Any]) -> str | None:
    if turn.get("role") != "user":
        return None
    text = content_text(turn.get("content"))
    return speaker_of(text.lstrip()) if text else None

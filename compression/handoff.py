"""Summaries that earlier compactions left in a transcript (SPEC 6.3, 6.9).

A caller that stores messages says which rows are its summaries (`flags`, from the stored
kind), so no member can forge one by its wording; without flags (a library caller handing
back the compressor's own output) they are found by their prefix. Merged ones are unwrapped
so the genuine text inside survives (#47274).
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.compression.message_hints import PLAIN, hinted
from compactbot.compression.messages import is_summary_message, role_of, text_of, tool_calls_of
from compactbot.compression.template import (
    SUMMARY_PREFIX_HEAD,
    is_summary_text,
    summary_body,
    unwrap_merged,
)

# Every summary text contains the prefix head; while the head holds a non-ASCII character
# (its em dash), an ASCII-only text cannot be one, and str knows that without a scan.
_ASCII_NEVER_SUMMARY = not SUMMARY_PREFIX_HEAD.isascii()
_CONTENT = operator.methodcaller("get", "content")


@dataclass(frozen=True, slots=True)
class Handoff:
    """The transcript without earlier summaries, and those summaries' bodies, oldest first."""

    messages: list[Mapping[str, Any]]  # the caller's own objects, except the unwrapped ones
    bodies: tuple[str, ...]
    # Where each kept message came from in the input (-1: a merged message, now changed, so
    # its count is taken again), and the inputs that carried a summary: so the callers' token
    # counts follow the messages.
    sources: Sequence[int] = ()
    summary_sources: Sequence[int] = ()
    origin: Sequence[int] = ()  # index in the input of each kept message, merged ones too

    @property
    def previous_summary(self) -> str | None:
        joined = "\n\n".join(body for body in self.bodies if body.strip())
        return joined or None


def take_handoffs(
    messages: Sequence[Mapping[str, Any]],
    flags: Sequence[bool] | None = None,
    hints: Sequence[int] | None = None,
) -> Handoff:
    """Remove standalone summaries and unwrap merged ones; the input is not modified.

    `hints` (message_hints, one per message) mark the messages whose wording is no summary."""
    possible = _possible(messages, flags, hints)
    found = [i for i in possible if _may_be_summary(messages[i], _flag(flags, i))]
    if not found:  # the common case: the transcript as it is, nothing copied
        every = range(len(messages))  # no list of a long transcript's indices is built
        return Handoff(list(messages), (), every, (), every)
    kept: list[Mapping[str, Any]] = []
    bodies: list[str] = []
    sources: list[int] = []
    summary_sources: list[int] = []
    origin: list[int] = []
    previous = 0
    for index in found:
        kept.extend(messages[previous:index])
        sources.extend(range(previous, index))
        origin.extend(range(previous, index))
        previous = index + 1
        message = messages[index]
        bodies.append(summary_body(text_of(message)))
        summary_sources.append(index)
        restored = _without_summary(message)
        if restored is not None:
            kept.append(restored)
            sources.append(-1)
            origin.append(index)
    kept.extend(messages[previous:])
    sources.extend(range(previous, len(messages)))
    origin.extend(range(previous, len(messages)))
    return Handoff(kept, tuple(bodies), tuple(sources), tuple(summary_sources), tuple(origin))


def _possible(
    messages: Sequence[Mapping[str, Any]],
    flags: Sequence[bool] | None,
    hints: Sequence[int] | None,
) -> list[int]:
    """Indices of the messages that may be summaries, found without a call per message."""
    if flags is None and hints is not None and len(hints) == len(messages):
        return hinted(hints, PLAIN, clear=True)
    flagged = min(len(flags), len(messages)) if flags is not None else 0
    found = [i for i in range(flagged) if flags[i]] if flags is not None else []
    if not _ASCII_NEVER_SUMMARY:
        return found + list(range(flagged, len(messages)))
    contents = map(_CONTENT, messages[flagged:])
    found += [
        flagged + i for i, c in enumerate(contents) if not (isinstance(c, str) and c.isascii())
    ]
    return found


def _flag(flags: Sequence[bool] | None, index: int) -> bool | None:
    return flags[index] if flags is not None and index < len(flags) else None


def _may_be_summary(message: Mapping[str, Any], flagged: bool | None) -> bool:
    if role_of(message) == "system":
        return False
    if flagged is not None:
        return flagged
    content = message.get("content")
    if _ASCII_NEVER_SUMMARY and isinstance(content, str) and content.isascii():
        return False
    return is_summary_message(message)


def _without_summary(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """The message as it was before a summary was merged into it, or None if it was only that."""
    content = message.get("content")
    restored = dict(message)
    if isinstance(content, list):
        parts = [_genuine_part(part) for part in content]
        restored["content"] = [part for part in parts if part is not None]
        has_content = bool(restored["content"])
    else:
        prior = unwrap_merged(content) if isinstance(content, str) else None
        restored["content"] = prior if prior else None
        has_content = bool(prior and prior.strip())
    if has_content:
        return restored
    if tool_calls_of(message):
        restored["content"] = None
        return restored
    return None


def _genuine_part(part: Any) -> Any:
    text = part.get("text") if isinstance(part, Mapping) else None
    if not isinstance(text, str) or not is_summary_text(text):
        return part
    prior = unwrap_merged(text)
    return {**part, "text": prior} if prior and prior.strip() else None

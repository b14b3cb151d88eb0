"""Summaries that earlier compactions left in a transcript (SPEC 6.3, 6.9).

A caller that stores messages says which rows are its summaries (`flags`, from the stored
kind), so no member can forge one by its wording; without flags (a library caller handing
back the compressor's own output) they are found by their prefix. Merged ones are unwrapped
so the genuine text inside survives (#47274).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compression.messages import is_summary_message, role_of, text_of, tool_calls_of
from compression.template import is_summary_text, summary_body, unwrap_merged


@dataclass(frozen=True, slots=True)
class Handoff:
    """The transcript without earlier summaries, and those summaries' bodies, oldest first."""

    messages: list[dict[str, Any]]
    bodies: tuple[str, ...]
    origin: list[int]  # index in the input of each kept message

    @property
    def previous_summary(self) -> str | None:
        joined = "\n\n".join(body for body in self.bodies if body.strip())
        return joined or None


def take_handoffs(
    messages: Sequence[Mapping[str, Any]], flags: Sequence[bool] | None = None
) -> Handoff:
    """Remove standalone summaries and unwrap merged ones; the input is not modified."""
    kept: list[dict[str, Any]] = []
    bodies: list[str] = []
    origin: list[int] = []
    for index, message in enumerate(messages):
        flagged = flags[index] if flags is not None and index < len(flags) else None
        summary = is_summary_message(message) if flagged is None else flagged
        if role_of(message) == "system" or not summary:
            kept.append(dict(message))
            origin.append(index)
            continue
        bodies.append(summary_body(text_of(message)))
        restored = _without_summary(message)
        if restored is not None:
            kept.append(restored)
            origin.append(index)
    return Handoff(kept, tuple(bodies), origin)


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

"""The gateway's cheap pre-agent check: decides only, the gateway acts (SPEC 7)."""

from __future__ import annotations

from typing import Literal

from compactbot.compression.thresholds import effective_window

HygieneReason = Literal["tokens", "hard_limit"]


def hygiene_reason(
    *,
    message_count: int,
    tokens: int,
    context_length: int,
    threshold: float = 0.85,
    hard_message_limit: int = 5000,
    min_messages: int = 4,
) -> HygieneReason | None:
    """Why the session must be compressed before the agent runs, or None."""
    if message_count < min_messages:
        return None
    if message_count >= hard_message_limit:
        return "hard_limit"
    if context_length > 0 and tokens >= int(context_length * threshold):
        return "tokens"
    return None


def needs_room(*, tokens: int, context_length: int, max_tokens: int | None = None) -> bool:
    """A prompt this large cannot be sent at all: compact even while the breaker pauses.

    The anti-thrash pause stops automatic retries only; a request never exceeds the window.
    """
    return tokens >= effective_window(context_length, max_tokens)

"""What one `compress` call did, as a value the caller can log, persist and announce."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from compactbot.compression.memory import Memory

Outcome = Literal["compressed", "fallback", "aborted", "noop"]


@dataclass(frozen=True, slots=True)
class CompressionResult:
    """Messages to use next plus the outcome; `summary` is the summary body (no prefix)."""

    messages: list[dict[str, Any]]
    summary: str | None
    outcome: Outcome
    tokens_before: int
    tokens_after: int
    savings_pct: float
    # Short, redacted reason for a failed summarizer call or a no-op; never message text.
    error: str | None = None
    messages_summarised: int = 0
    # Set when this call armed a failure cooldown: automatic calls skip the summarizer until then.
    cooldown_until: float | None = None
    # Set when this call tripped the breaker: announce the pause once, it ends at this time.
    paused_until: float | None = None
    # The session's memory after this call (SPEC 6.11); persist it with the compacted rows.
    memory: Memory | None = None
    # Rules, preferences and open action items the summary could not show within the memory
    # cap (SPEC 6.11): they stay in the memory, reachable by recall.
    must_show_hidden: int = 0

    @property
    def changed(self) -> bool:
        return self.outcome in ("compressed", "fallback")

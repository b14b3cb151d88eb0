"""The compressor's durable state: what a caller persists and hands back after a restart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# transient: 429, 5xx or a provider timeout; the span waits for the model (SPEC 6.4).
CooldownCause = Literal["auth", "network", "transient", "other"]


@dataclass(frozen=True, slots=True)
class CompressorState:
    compression_count: int = 0
    previous_summary: str | None = None
    # Breaker: strikes of ineffective compactions, the pause they caused and how often it escalated.
    strikes: int = 0
    pause_until: float = 0.0
    pause_level: int = 0
    # Failure cooldown after a summarizer failure, and how many failures in a row armed it.
    cooldown_until: float = 0.0
    cooldown_cause: CooldownCause | None = None
    failure_streak: int = 0
    # Last provider-reported prompt tokens; -1 right after a compaction ("wait for a real count").
    last_prompt_tokens: int = 0
    # A compaction completed and the next real prompt count decides whether it was effective.
    verdict_pending: bool = False
    # What the memory's must-show entries need in the summary (pins apart), as of the last
    # compaction: /status and the console read this, never the whole memory.
    memory_need_tokens: int = 0

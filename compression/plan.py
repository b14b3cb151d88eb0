"""What one compaction works on: the transcript without earlier summaries, its counts, the
memory that belongs to it and the boundaries of the middle (SPEC 6.3 phases 2 and 3)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.compression.boundaries import Boundaries, plan_boundaries
from compactbot.compression.handoff import take_handoffs
from compactbot.compression.memory import Memory
from compactbot.compression.thresholds import CompressorConfig
from compactbot.compression.tokens import MessageCounter


@dataclass(frozen=True, slots=True)
class Plan:
    working: list[Mapping[str, Any]]
    tokens: Sequence[int]  # one per working message
    hints: list[int | None] | None  # one per working message, when the caller gave them
    previous_summary: str | None
    previous_tokens: int  # an upper bound: the tokens of the messages that carried it
    boundaries: Boundaries
    origin: Sequence[int]  # index in the caller's list of each working message
    memory: Memory  # the memory that belongs to this transcript


def plan_compaction(
    messages: Sequence[Mapping[str, Any]],
    counts: Sequence[int],
    flags: Sequence[bool] | None,
    hints: Sequence[int] | None,
    counter: MessageCounter,
    config: CompressorConfig,
    memory_of: Callable[[Sequence[str]], Memory],
) -> Plan:
    """`flags` mark the caller's summary rows; `memory_of` picks the memory for the bodies of
    the summaries the transcript carries."""
    handoff = take_handoffs(messages, flags, hints)
    working = handoff.messages
    sources = handoff.sources
    if not handoff.bodies:  # nothing taken out: the messages and counts as they are
        tokens: Sequence[int] = list(counts)
    else:
        tokens = [
            counts[source] if source >= 0 else counter.count_message(message)
            for source, message in zip(sources, working, strict=True)
        ]
    # A summary in the transcript means a compaction already ran, also before a restart:
    # the head decays (#11996) and that summary is the one to update.
    memory = memory_of(handoff.bodies)
    boundaries = plan_boundaries(
        working,
        budget=config.tail_token_budget,
        protect_first_n=config.protect_first_n,
        protect_last_n=config.protect_last_n,
        decayed=bool(handoff.bodies) or bool(memory.entries),
        tokens=tokens,
    )
    previous_tokens = sum(counts[i] for i in handoff.summary_sources)
    # An unwrapped summary (source -1) is not the message its hint was computed for.
    if hints is None or not handoff.bodies:
        known: list[int | None] | None = None if hints is None else list(hints)
    else:
        known = [hints[i] if i >= 0 else None for i in handoff.sources]
    return Plan(
        working,
        tokens,
        known,
        handoff.previous_summary,
        previous_tokens,
        boundaries,
        handoff.origin,
        memory,
    )

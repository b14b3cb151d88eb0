"""Phase 2: where the protected head ends and the protected tail starts (SPEC 6.3, 6.9)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.compression.messages import (
    is_real_user_message,
    is_tool_result,
    is_visible_assistant_reply,
    last_index,
    role_of,
)
from compactbot.compression.tokens import counter_for

# Hermes #9413: a bounded floor of recent messages, even when one of them blows the budget.
MIN_TAIL_MESSAGES = 3
MAX_TAIL_FLOOR = 8
# The walk may overshoot the budget this much rather than cut just before a big message.
SOFT_CEILING_RATIO = 1.5

Messages = Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Boundaries:
    """`messages[:start]` is kept as the head, `[start:end]` summarised, `[end:]` the tail."""

    start: int
    end: int

    @property
    def empty(self) -> bool:
        return self.end <= self.start


def tail_floor(protect_last_n: int) -> int:
    return max(MIN_TAIL_MESSAGES, min(protect_last_n, MAX_TAIL_FLOOR))


def head_size(messages: Messages, protect_first_n: int, *, decayed: bool) -> int:
    """System prompt plus `protect_first_n` non-system messages, or only the prompt once decayed.

    Counting non-system messages fixes Hermes #13754; the decay fixes #11996 (early turns
    re-copied verbatim into every compaction forever).
    """
    system = 1 if messages and role_of(messages[0]) == "system" else 0
    extra = 0 if decayed else protect_first_n
    return align_forward(messages, min(len(messages), system + extra))


def align_forward(messages: Messages, index: int) -> int:
    """Move past tool results so a region never starts in the middle of a tool group."""
    while index < len(messages) and is_tool_result(messages[index]):
        index += 1
    return index


def align_backward(messages: Messages, index: int, lower: int = 0) -> int:
    """Move back to the assistant that owns the tool results at `index`, keeping the group whole."""
    probe = index
    while lower < probe < len(messages) and is_tool_result(messages[probe]):
        probe -= 1
    if probe < len(messages) and is_tool_result(messages[probe]):
        return index
    return probe


def find_tail_start(
    messages: Messages,
    budget: int,
    *,
    head_end: int = 0,
    protect_last_n: int = 20,
    tokens: Sequence[int] | None = None,
) -> int:
    """Index where the protected tail begins; never before `head_end`."""
    n = len(messages)
    available = n - head_end
    if available <= 0:
        return n
    if tokens is None:
        tokens = [counter_for(None).count_message(m) for m in messages]
    floor = min(tail_floor(protect_last_n), max(MIN_TAIL_MESSAGES, available - 2), available)
    cut = _walk_back(tokens, head_end, int(budget * SOFT_CEILING_RATIO), floor)
    if cut <= head_end:
        # Everything fitted the soft ceiling: without a re-walk nothing would ever be
        # summarised and every turn would re-run a no-op compaction (Hermes #40803).
        cut = _walk_back(tokens, head_end, budget, floor)
        if cut <= head_end:
            cut = n - floor
    cut = align_backward(messages, cut, head_end)
    cut = _anchor(messages, cut, head_end, tokens, int(budget * SOFT_CEILING_RATIO))
    return min(n, max(head_end, align_forward(messages, cut)))


def _walk_back(tokens: Sequence[int], head_end: int, limit: int, floor: int) -> int:
    n = len(tokens)
    total = 0
    cut = n
    for index in range(n - 1, head_end - 1, -1):
        if total + tokens[index] > limit and n - cut >= floor:
            break
        total += tokens[index]
        cut = index
    return cut


def _anchor(
    messages: Messages, cut: int, head_end: int, tokens: Sequence[int], ceiling: int
) -> int:
    """Pull the latest ask (Hermes #10896) and the reply just read (#29824) into the tail.

    The reply only while the tail still fits the ceiling: after a flood of unaddressed
    messages it is summarised with its question, or nothing could ever be compacted again.
    """
    user = last_index(messages, is_real_user_message, head_end)
    if 0 <= user < cut:
        cut = user
    reply = last_index(messages, is_visible_assistant_reply, head_end)
    if 0 <= reply < cut:
        pulled = align_backward(messages, reply, head_end)
        if _fits(tokens, pulled, cut, ceiling):
            cut = pulled
    return cut


def _fits(tokens: Sequence[int], start: int, cut: int, ceiling: int) -> bool:
    """Whether `[start:]` fits `ceiling`; counts no further back than the ceiling reaches."""
    total = sum(tokens[index] for index in range(cut, len(tokens)))
    for index in range(cut - 1, start - 1, -1):
        if total > ceiling:
            return False
        total += tokens[index]
    return total <= ceiling


def plan_boundaries(
    messages: Messages,
    *,
    budget: int,
    protect_first_n: int,
    protect_last_n: int,
    decayed: bool,
    tokens: Sequence[int],
) -> Boundaries:
    """Head, middle and tail of one compaction."""
    start = head_size(messages, protect_first_n, decayed=decayed)
    end = find_tail_start(
        messages, budget, head_end=start, protect_last_n=protect_last_n, tokens=tokens
    )
    if end > start:
        return Boundaries(start, end)
    # The latest ask opens the middle and everything after it is tool work: keep the ask in
    # the head verbatim and summarise the work, instead of refusing until the turn ends.
    user = last_index(messages, is_real_user_message, start)
    if user == start:
        start = align_forward(messages, user + 1)
        end = find_tail_start(
            messages, budget, head_end=start, protect_last_n=protect_last_n, tokens=tokens
        )
    return Boundaries(start, max(start, end))

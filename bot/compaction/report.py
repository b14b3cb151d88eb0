"""What one compaction reports: its outcome and counts, and the one line the chat is told."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from compactbot.compression import CompressionResult
from compactbot.compression.state import CompressorState

CHANGED_OUTCOMES = frozenset({"compressed", "fallback"})


@dataclass(frozen=True, slots=True)
class CompactionReport:
    outcome: str  # compressed | fallback | aborted | noop | locked | conflict | error
    trigger: str
    messages_before: int = 0
    messages_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    summary: str | None = None
    error: str | None = None
    notice: str | None = None  # one line for the chat, or None: routine compactions are silent
    # The compacted copy of the `upto` row, so a turn can keep answering the same message.
    new_anchor_id: int | None = None
    summary_calls: int = 0  # model calls the summary took
    summary_cost_tokens: int = 0  # what they spent, prompt + completion

    @property
    def changed(self) -> bool:
        return self.outcome in CHANGED_OUTCOMES

    def fenced_out(self) -> CompactionReport:
        """This compaction, lost to a newer version of the session: nothing changed, but the
        summary calls were made and paid for."""
        return CompactionReport(
            "conflict",
            self.trigger,
            self.messages_before,
            self.messages_before,
            self.tokens_before,
            self.tokens_before,
            error="fenced out",
            summary_calls=self.summary_calls,
            summary_cost_tokens=self.summary_cost_tokens,
        )


# Told the report once a background compaction has ended (committed or not).
ReportSink = Callable[[CompactionReport], Awaitable[None]]


def compaction_notice(
    result: CompressionResult, before: CompressorState, after: CompressorState, now: float
) -> str | None:
    """The line the chat is told about this compaction, or None: routine ones are silent."""
    if result.outcome == "aborted" and before.cooldown_until <= now and result.error:
        return (
            "⚠️ I couldn't compact this chat's history (the summary service failed: "
            f"{result.error}). Nothing was lost; I'll retry later, "
            "or an admin can run /compress."
        )
    if after.pause_until > now >= before.pause_until:
        minutes = max(1, round((after.pause_until - now) / 60))
        return (
            "⏸ Automatic compaction is paused for "
            f"{minutes} min because the last attempts did not shrink the context. "
            "Admins can run /compress or /new."
        )
    return None

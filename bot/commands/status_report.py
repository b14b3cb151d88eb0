"""Text for /status and /usage: a context gauge and token counts people can read at a glance."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from compactbot.bot.compaction.memory_cap import MemoryOverCap
from compactbot.bot.store.base import CompressionEvent, SessionRecord, UsageRow
from compactbot.compression import compute_threshold_tokens

GAUGE_WIDTH = 20


def gauge(used: int, total: int, width: int = GAUGE_WIDTH) -> str:
    ratio = 0.0 if total <= 0 else min(1.0, max(0.0, used / total))
    filled = round(ratio * width)
    return f"[{'█' * filled}{'░' * (width - filled)}] {ratio:.0%}"


def _when(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def status_text(
    session: SessionRecord,
    *,
    context_length: int,
    threshold: float,
    hygiene_threshold: float,
    max_tokens: int | None,
    archived_messages: int,
    last_compaction: CompressionEvent | None,
    now: float,
    memory_counts: Mapping[str, int] | None = None,
    memory_over_cap: MemoryOverCap | None = None,
) -> str:
    state = session.compressor
    used = max(state.last_prompt_tokens, session.active_tokens)
    trigger_at = compute_threshold_tokens(context_length, threshold, max_tokens)
    hygiene_at = int(context_length * hygiene_threshold)
    lines = [
        f"📊 Context {gauge(used, context_length)}",
        f"Tokens: {used:,} / {context_length:,}",
        # Two triggers, each named: they use different shares of the window.
        f"Compaction before a reply at {trigger_at:,} (threshold {threshold:.0%}); "
        f"background hygiene at {hygiene_at:,} (hygiene_threshold {hygiene_threshold:.0%})",
        f"Messages: {session.active_messages:,} active, {archived_messages:,} archived",
        f"Compactions: {state.compression_count}",
        "Memory: " + (memory_line(memory_counts) if memory_counts else "nothing remembered yet"),
    ]
    if memory_over_cap is not None:
        lines.append(
            f"⚠️ Pins, rules, preferences and open action items need {memory_over_cap.need:,} "
            f"tokens, over the summary's cap of {memory_over_cap.cap:,}: the summary shows what "
            "fits, recall finds the rest"
        )
    if last_compaction is not None:
        lines.append(
            "Last compaction: "
            f"{last_compaction.tokens_before:,} → {last_compaction.tokens_after:,} tokens, "
            f"{last_compaction.messages_before:,} → {last_compaction.messages_after:,} messages "
            f"({last_compaction.trigger}, {_when(last_compaction.ended_at)})"
        )
    if state.pause_until > now:
        lines.append(f"Breaker: automatic compaction paused until {_when(state.pause_until)}")
    elif state.cooldown_until > now:
        cause = state.cooldown_cause or "failure"
        lines.append(
            f"Cooldown after a summary {cause} failure until {_when(state.cooldown_until)}"
        )
    else:
        lines.append("Breaker: ok")
    return "\n".join(lines)


# How /status names each kind of memory entry (SPEC 6.11), singular and plural.
_KIND_NAMES = {
    "participant": ("participant", "participants"),
    "rule": ("rule", "rules"),
    "decision": ("decision", "decisions"),
    "fact": ("fact", "facts"),
    "preference": ("preference", "preferences"),
    "action": ("action item", "action items"),
    "question": ("question", "questions"),
    "link": ("link", "links"),
    "tool": ("tool call", "tool calls"),
    "topic": ("topic", "topics"),
    "narrative": ("note", "notes"),
}


def memory_line(counts: Mapping[str, int]) -> str:
    """ "12 participants, 3 rules, 1 decision" """
    parts = []
    for kind, count in counts.items():
        one, many = _KIND_NAMES.get(kind, (kind, kind))
        parts.append(f"{count} {one if count == 1 else many}")
    return ", ".join(parts)


def usage_text(rows: Sequence[UsageRow], *, today: str) -> str:
    def total(selected: Sequence[UsageRow], purpose: str) -> tuple[int, int]:
        picked = [r for r in selected if r.purpose == purpose]
        return sum(r.prompt_tokens + r.completion_tokens for r in picked), sum(
            r.calls for r in picked
        )

    today_rows = [r for r in rows if r.day == today]
    lines = ["📈 Usage (UTC)"]
    for label, selected in (("Today", today_rows), ("This month", list(rows))):
        reply_tokens, reply_calls = total(selected, "reply")
        comp_tokens, comp_calls = total(selected, "compression")
        lines.append(
            f"{label}: {reply_tokens + comp_tokens:,} tokens in {reply_calls + comp_calls} calls "
            f"(replies {reply_tokens:,} / {reply_calls}, "
            f"compression {comp_tokens:,} / {comp_calls})"
        )
    return "\n".join(lines)

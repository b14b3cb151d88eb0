"""What the summarizer is shown (SPEC 6.5: every message of the span it summarises), at several
windows and transcript sizes of the chat of `reference/hermes-speed.md`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.hermes_chat import hermes_chat, reference
from bench.report import Section, pct, table
from compactbot.compression import CompressorConfig, ContextCompressor, SummaryRequest
from compactbot.compression.tokens import counter_for

WINDOWS = (8_192, 128_000, 200_000, 1_000_000)
SIZES = (1_000, 5_000, 50_000)
SIZE_WINDOW = 200_000
HYGIENE_POINT = 0.85


class CountingSummarizer:
    """Counts the turns it is shown, and answers one note per call."""

    def __init__(self) -> None:
        self.shown = 0
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        self.shown += len(request.turns)
        return "NOTE | - | - | read"


@dataclass(frozen=True, slots=True)
class Shown:
    label: str
    messages: int
    summarised: int
    shown: int
    calls: int

    @property
    def share(self) -> float:
        return self.shown / self.summarised if self.summarised else float("nan")


async def shown_share(label: str, messages: list[dict[str, Any]], window: int) -> Shown:
    counter = counter_for(None)
    summarizer = CountingSummarizer()
    compressor = ContextCompressor(CompressorConfig(context_length=window), summarizer)
    result = await compressor.compress(
        messages, force=True, token_counts=[counter.count_message(m) for m in messages]
    )
    return Shown(label, len(messages), result.messages_summarised, summarizer.shown,
                 summarizer.calls)  # fmt: skip


def at_hygiene_point(window: int) -> list[dict[str, Any]]:
    """The reference chat cut where it reaches 85 % of `window` tokens."""
    counter = counter_for(None)
    goal = int(window * HYGIENE_POINT)
    per_message = max(1, counter.count_messages(hermes_chat(200)) // 200)
    size = max(10, goal // per_message)
    messages = hermes_chat(size)
    while size > 10 and counter.count_messages(messages) > goal:
        size = int(size * 0.95)
        messages = hermes_chat(size)
    return messages


async def run(section: Section, quick: bool) -> None:
    if reference() is None:
        section.add("Summarizer coverage skipped: reference/hermes_speed_chat.py not found.", "")
        return
    windows = WINDOWS[:2] if quick else WINDOWS
    sizes = SIZES[:2] if quick else SIZES
    rows: list[Shown] = []
    for window in windows:
        rows.append(await shown_share(f"{window:,}-token window", at_hygiene_point(window), window))
    for size in sizes:
        rows.append(await shown_share(f"{size:,} messages", hermes_chat(size), SIZE_WINDOW))
    section.add(
        "Share of the summarised messages shown to the summarizer (every message must be "
        f"read, SPEC 6.5): the hermes-speed chat at {HYGIENE_POINT:.0%} of each window, and "
        f"at each size on a {SIZE_WINDOW:,}-token window; one `compress(force=True)` each.",
        "",
        *table(
            ["transcript", "messages", "summarised", "shown to the summarizer", "calls", "share"],
            [[r.label, f"{r.messages:,}", f"{r.summarised:,}", f"{r.shown:,}", r.calls,
              pct(r.share)] for r in rows],
        ),
    )  # fmt: skip
    worst = min((r.share for r in rows), default=float("nan"))
    section.target(
        "Share of summarised messages shown to the summarizer, every window and size",
        "100 %",
        f"lowest {pct(worst)}",
        worst == 1.0,
    )

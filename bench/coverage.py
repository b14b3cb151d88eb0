"""What the summarizer is shown (SPEC 6.5: every message) and whether the summary stays bounded.

Two measurements beside retention: the share of the summarised messages that reach the
summarizer, at several windows and transcript sizes (the chat of hermes-speed.md), and the
rendered summary's size after k = 10, 20, 50 compactions of one long room.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from bench.drive import drive
from bench.report import Section, pct, table
from bench.summarizers import LossySummarizer
from bench.workloads import NAMES, chat_room
from compactbot.compression import CompressorConfig, ContextCompressor, SummaryRequest
from compactbot.compression.tokens import counter_for

WINDOWS = (8_192, 128_000, 200_000, 1_000_000)
SIZES = (1_000, 5_000, 50_000)
SIZE_WINDOW = 200_000
HYGIENE_POINT = 0.85
GROWTH_K = (10, 20, 50)
GROWTH_WINDOW = 16_000
_WORDS = ("deploy", "lunch", "tests", "release", "budget", "design", "docs", "review", "build")


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
    summarizer = CountingSummarizer()
    compressor = ContextCompressor(CompressorConfig(context_length=window), summarizer)
    result = await compressor.compress(messages, force=True)
    return Shown(label, len(messages), result.messages_summarised, summarizer.shown,
                 summarizer.calls)  # fmt: skip


def hermes_chat(count: int, seed: int = 5) -> list[dict[str, Any]]:
    """The synthetic chat of reference/hermes-speed.md, exactly `count` messages after the
    system prompt, ending on a user message."""
    rng = random.Random(f"hermes:{seed}")
    tools = ("web_search", "terminal", "read_file")
    out: list[dict[str, Any]] = [{"role": "system", "content": _sized("system", 4_050, rng)}]
    turn = 0
    while len(out) - 1 < count:
        out.append({"role": "user", "content": f"[{NAMES[turn % 8]}] " + _sized("u", 291, rng)})
        if turn % 10 == 9:
            name = tools[(turn // 10) % 3]
            call_id = f"call_{turn}"
            arguments = json.dumps({"query": f"lookup {turn}", "path": f"src/file_{turn}.py"})
            call = {"id": call_id, "type": "function",
                    "function": {"name": name, "arguments": arguments}}  # fmt: skip
            out.append({"role": "assistant", "content": None, "tool_calls": [call]})
            out.append({"role": "tool", "tool_call_id": call_id,
                        "content": _sized(f"{name} {turn}", 3_000, rng)})  # fmt: skip
        out.append({"role": "assistant", "content": _sized("a", 400, rng)})
        turn += 1
    out = out[: count + 1]
    while out[-1]["role"] != "user" or out[-1].get("tool_calls"):
        out.pop()
    while len(out) - 1 < count:
        out.append({"role": "user", "content": f"[{NAMES[len(out) % 8]}] " + _sized("p", 291, rng)})
    return out


def _sized(tag: str, chars: int, rng: random.Random) -> str:
    words = [tag]
    length = len(tag)
    while length < chars:
        word = f"{rng.choice(_WORDS)}{rng.randrange(1000)}"
        words.append(word)
        length += len(word) + 1
    return " ".join(words)[:chars]


def at_hygiene_point(window: int) -> list[dict[str, Any]]:
    """The hermes-speed chat cut where it reaches 85 % of `window` tokens."""
    counter = counter_for(None)
    goal = int(window * HYGIENE_POINT)
    per_message = max(1, counter.count_messages(hermes_chat(200)) // 201)
    size = max(10, goal // per_message)
    messages = hermes_chat(size)
    while size > 10 and counter.count_messages(messages) > goal:
        size = int(size * 0.95)
        messages = hermes_chat(size)
    return messages


async def growth(quick: bool) -> list[tuple[int, int, int, int]]:
    """(k, summary tokens, summary budget, tokens after) at each k of GROWTH_K reached."""
    room = chat_room(12, 3_000 if quick else 9_000, 11, per_kind=4)
    lossy = LossySummarizer(room.planted, room.people, p=0.10, seed="growth")
    run = await drive(room, strategy="growth", kind="compressor", window=GROWTH_WINDOW,
                      summarizer=lossy, probe_items=False)  # fmt: skip
    config = CompressorConfig(context_length=GROWTH_WINDOW)
    out = []
    for k in GROWTH_K:
        if k <= len(run.compactions):
            c = run.compactions[k - 1]
            out.append((k, run.summary_tokens[k - 1], config.summary_budget(c.tokens_before),
                        c.tokens_after))  # fmt: skip
    return out


async def run(section: Section, quick: bool) -> None:
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
    grown = await growth(quick)
    section.add(
        f"Rendered summary after k compactions of one 12-person room (window "
        f"{GROWTH_WINDOW:,}, lossy summarizer): the memory grows, the summary stays in budget.",
        "",
        *table(
            ["k", "summary tokens", "summary budget", "context after the compaction"],
            [[k, f"{t:,}", f"{b:,}", f"{a:,}"] for k, t, b, a in grown],
        ),
    )
    trigger = CompressorConfig(context_length=GROWTH_WINDOW).threshold_tokens
    ok = all(t <= b and a < trigger for _, t, b, a in grown)
    section.target(
        "Rendered summary within its budget and context under the trigger at k = 10, 20, 50",
        "every k",
        ", ".join(f"k={k}: {t:,}/{b:,}" for k, t, b, _ in grown) or "not reached",
        ok and len(grown) == (len(GROWTH_K) if not quick else len(grown)),
    )

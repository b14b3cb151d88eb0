"""Scripted summarizers (`compression.Summarizer`): deterministic stand-ins for an LLM.

They separate the pipeline's quality from a model's: the oracle is the upper bound (it copies
every planted line it is shown, and every line of the previous summary), the lossy one plays
the telephone game, the forgetful one ignores the previous summary (one-shot regeneration).
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bench.workloads import Planted
from compression.deterministic import deterministic_summary
from compression.summarizer import SummaryRequest
from compression.template import HEADING_KEY_FACTS, HEADING_PINS, build_summary_prompt
from compression.tokens import TokenCounter, counter_for
from compression.transcript import content_text, split_speaker

_HEADING = re.compile(r"^#{1,6} ")
# The marker `summary_turns` puts where it cut the middle of an oversized input.
_OMITTED = re.compile(r"\[… (\d+) messages omitted …\]")


@dataclass(slots=True)
class SummaryCalls:
    """What the summarizer was asked and wrote, in tokens, as an LLM would bill it."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    input_sizes: list[int] = field(default_factory=list)
    omitted_messages: int = 0  # turns the compressor left out of the summarizer's input


class OracleSummarizer:
    """Copies every planted line seen in the turns, and every line of the previous summary.

    It knows the planted items, so an update's new value replaces its old one: the upper bound
    a perfect merge-only summarizer reaches.
    """

    name = "perfect"

    def __init__(self, planted: Iterable[Planted], *, keep_previous: bool = True) -> None:
        self._by_text = {p.text: p for p in planted}
        self._stale = {p.stale_value: p for p in self._by_text.values() if p.stale_value}
        self._keep_previous = keep_previous
        self.calls = SummaryCalls()

    async def summarize(self, request: SummaryRequest) -> str:
        lines = self._previous_lines(request) if self._keep_previous else []
        for turn in request.turns:
            if turn.get("role") == "system":
                found_omitted = _OMITTED.search(content_text(turn.get("content")))
                self.calls.omitted_messages += int(found_omitted[1]) if found_omitted else 0
            if turn.get("role") != "user":
                continue
            speaker, text = split_speaker(content_text(turn.get("content")).strip())
            found = self._by_text.get(text) or self._v1(text)
            if found is None:
                continue
            if found.stale_value is not None and found.text == text:
                lines = [line for line in lines if found.stale_value not in line]
            lines.append(f"- [{speaker}] {text}")
        lines = self.degrade(lines)
        body = _render(lines, request.pins, self.degrade_pins(request.pins))
        self._meter(request, body)
        return body

    def _v1(self, text: str) -> Planted | None:
        """The text of an update's first value is planted too (it is what goes stale)."""
        for value, item in self._stale.items():
            if value in text and item.text != text and any(t in text for t in item.together):
                return item
        return None

    def _previous_lines(self, request: SummaryRequest) -> list[str]:
        if not request.previous_summary:
            return []
        lines = []
        in_pins = False
        for raw in request.previous_summary.splitlines():
            line = raw.rstrip()
            if _HEADING.match(line):
                in_pins = line.strip() == HEADING_PINS
                continue
            if line.strip() and not in_pins:
                lines.append(line)
        return list(dict.fromkeys(lines))

    def degrade(self, lines: list[str]) -> list[str]:
        return lines

    def degrade_pins(self, pins: Sequence[str]) -> list[str]:
        return [f"- {pin}" for pin in pins]

    def _meter(self, request: SummaryRequest, body: str) -> None:
        meter(self.calls, request, body)


class LossySummarizer(OracleSummarizer):
    """The oracle, then every planted line (carried or new) is dropped or mutated with
    probability `p` per regeneration: the telephone game of free-form LLM summaries."""

    name = "lossy"

    def __init__(
        self, planted: Iterable[Planted], people: Sequence[str], *, p: float, seed: int | str
    ) -> None:
        super().__init__(planted)
        self._people = list(people)
        self._p = p
        self._rng = random.Random(f"lossy:{seed}")

    def degrade(self, lines: list[str]) -> list[str]:
        out = []
        for line in lines:
            if self._rng.random() >= self._p:
                out.append(line)
            elif self._rng.random() < 0.5:
                out.append(self._mutate(line))
            # else: dropped
        return out

    def degrade_pins(self, pins: Sequence[str]) -> list[str]:
        # Pins suffer like any line; the compressor must restore them (ensure_pins).
        return self.degrade([f"- {pin}" for pin in pins])

    def _mutate(self, line: str) -> str:
        """A changed digit or letter of a value, or the wrong person named as speaker."""
        match = re.match(r"- \[(?P<name>[^\]]+)\] ", line)
        if match and self._rng.random() < 0.5:
            others = [p for p in self._people if p != match["name"]]
            if others:
                return line.replace(f"[{match['name']}]", f"[{self._rng.choice(others)}]", 1)
        positions = [i for i, ch in enumerate(line) if ch.isdigit()]
        if not positions:
            positions = [i for i, ch in enumerate(line) if ch.isalpha()][4:]
        if not positions:
            return line
        i = self._rng.choice(positions)
        ch = line[i]
        new = str((int(ch) + 1) % 10) if ch.isdigit() else ("x" if ch != "x" else "y")
        return line[:i] + new + line[i + 1 :]


class ForgetfulSummarizer(OracleSummarizer):
    """Summarizes only the new turns, ignoring the previous summary (one-shot regeneration)."""

    name = "forgetful"

    def __init__(self, planted: Iterable[Planted]) -> None:
        super().__init__(planted, keep_previous=False)


class FailingSummarizer:
    """Raises on every call: the compressor must fall back to the deterministic summary."""

    name = "failing"

    def __init__(self) -> None:
        self.calls = SummaryCalls()

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls.calls += 1
        raise RuntimeError("scripted summarizer failure")


class SlowSummarizer:
    """Sleeps `delay_seconds`, then answers like `inner`: an LLM's latency without its tokens."""

    name = "slow"

    def __init__(self, inner: object, delay_seconds: float) -> None:
        self._inner = inner
        self._delay = delay_seconds

    async def summarize(self, request: SummaryRequest) -> str:
        await asyncio.sleep(self._delay)
        return await self._inner.summarize(request)  # type: ignore[attr-defined]


class InstantSummarizer:
    """A fixed short summary at once: `compress()` timed without any LLM work."""

    name = "instant"

    async def summarize(self, request: SummaryRequest) -> str:
        return f"{HEADING_KEY_FACTS}\n- {len(request.turns)} turns were summarised."


class ExtractiveLLMSummarizer:
    """Writes the built-in deterministic summary but is metered as an LLM call: the input is
    the real summary prompt, the output that summary. A cost proxy of realistic size."""

    name = "llm-sized"

    def __init__(self) -> None:
        self.calls = SummaryCalls()

    async def summarize(self, request: SummaryRequest) -> str:
        body = deterministic_summary(request, unavailable=False)
        meter(self.calls, request, body)
        return body


def meter(calls: SummaryCalls, request: SummaryRequest, body: str) -> None:
    counter: TokenCounter = counter_for(None)
    prompt = counter.count_message({"role": "user", "content": build_summary_prompt(request)})
    calls.calls += 1
    calls.input_tokens += prompt
    calls.output_tokens += counter.count_text(body)
    calls.input_sizes.append(prompt)


def _render(lines: list[str], pins: Sequence[str], pin_lines: list[str]) -> str:
    body = HEADING_KEY_FACTS + "\n" + ("\n".join(lines) if lines else "- (nothing planted yet)")
    if pins:
        body += f"\n\n{HEADING_PINS}\n" + "\n".join(pin_lines)
    return body

"""Scripted summarizers (`compression.Summarizer`): deterministic stand-ins for an LLM.

They separate the pipeline's quality from a model's: the oracle is the upper bound (it writes
every planted line it is shown as an entry of the memory line format, naming an update's
subject), the lossy one loses 10 % of the entries it is asked to write, per call; the
forgetful one also writes a whole summary's worth of old entries again, ignoring nothing.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from bench.planted_items import Planted
from compactbot.compression.deterministic import deterministic_summary
from compactbot.compression.summarizer import SummaryRequest
from compactbot.compression.template import HEADING_KEY_FACTS, build_summary_prompt
from compactbot.compression.tokens import TokenCounter, counter_for
from compactbot.compression.transcript import content_text, split_speaker

# The marker an older compressor put where it cut the middle of an oversized input.
_OMITTED = re.compile(r"\[… (\d+) messages omitted …\]")
_LINE_KIND = {"rule": "RULE", "decision": "DECISION", "preference": "PREFERENCE",
              "action": "ACTION"}  # fmt: skip


@dataclass(slots=True)
class SummaryCalls:
    """What the summarizer was asked and wrote, in tokens, as an LLM would bill it."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    input_sizes: list[int] = field(default_factory=list)
    omitted_messages: int = 0  # turns the compressor left out of the summarizer's input
    shown_messages: int = 0  # turns the summarizer was shown, over all calls


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
        lines = self._previous_lines(request) if not self._keep_previous else []
        for turn in request.turns:
            if turn.get("role") == "system":
                found_omitted = _OMITTED.search(content_text(turn.get("content")))
                self.calls.omitted_messages += int(found_omitted[1]) if found_omitted else 0
                continue
            self.calls.shown_messages += 1
            if turn.get("role") != "user":
                continue
            speaker, text = split_speaker(content_text(turn.get("content")).strip())
            found = self._by_text.get(text) or self._v1(text)
            if found is None:
                continue
            kind = _LINE_KIND.get(found.kind, "FACT")
            # An update names its subject, so the memory supersedes the first value.
            subject = " ".join(found.together) if found.stale_value is not None else "-"
            lines.append(f"{kind} | {subject} | {speaker} | {text}")
        lines = self.degrade(lines) or ["NOTE | - | - | Chatter only; nothing new to remember."]
        body = "\n".join(lines)
        self._meter(request, body)
        return body

    def _v1(self, text: str) -> Planted | None:
        """The text of an update's first value is planted too (it is what goes stale)."""
        for value, item in self._stale.items():
            if value in text and item.text != text and any(t in text for t in item.together):
                return item
        return None

    def _previous_lines(self, request: SummaryRequest) -> list[str]:
        """The current entries written out again, as a regenerating summarizer would."""
        shown = request.memory or request.previous_summary or ""
        return [line.split(" ", 1)[1] for line in shown.splitlines() if line.startswith("#")]

    def degrade(self, lines: list[str]) -> list[str]:
        return lines

    def _meter(self, request: SummaryRequest, body: str) -> None:
        meter(self.calls, request, body)


class LossySummarizer(OracleSummarizer):
    """The oracle, then each entry it was asked to write is lost with probability `p`, per
    call: what a free-form LLM drops. What the memory already holds is carried by code."""

    name = "lossy"

    def __init__(
        self, planted: Iterable[Planted], people: Sequence[str], *, p: float, seed: int | str
    ) -> None:
        super().__init__(planted)
        self._people = list(people)
        self._p = p
        self._rng = random.Random(f"lossy:{seed}")

    def degrade(self, lines: list[str]) -> list[str]:
        return [line for line in lines if self._rng.random() >= self._p]


class ForgetfulSummarizer(OracleSummarizer):
    """Writes every current entry again with the new ones (regeneration): the fold must
    neither duplicate nor lose anything for it."""

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

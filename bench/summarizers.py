"""Scripted summarizers (`compression.Summarizer`): deterministic stand-ins for an LLM.

They separate the pipeline's quality from a model's. The perfect one knows the planted items:
it writes every planted line it is shown as an entry of the memory line format (SPEC 6.11)
with its kind, plus a short note per 25 lines of chatter, as a model summarising a busy chat
would; the lossy one then loses 10 % of the entries it was asked to write, per call; the
failing one raises, so the compressor falls back to its own extractor.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable

from bench.planted_items import Planted
from bench.probes import message_text
from compactbot.compression import SummaryRequest

_LINE_KIND = {"rule": "RULE", "preference": "PREFERENCE", "action": "ACTION",
              "decision": "DECISION", "fact": "FACT", "link": "LINK"}  # fmt: skip
CHATTER_LINES_PER_NOTE = 25
MAX_NOTES_PER_CALL = 40
NOTE_WORDS = 12


def _speaker_and_text(content: str) -> tuple[str | None, str]:
    if content.startswith("[") and "] " in content:
        name, text = content[1:].split("] ", 1)
        return name, text
    return None, content


class PerfectSummarizer:
    """Writes every planted line it is shown, with its kind and speaker, and a few notes."""

    name = "perfect"

    def __init__(self, planted: Iterable[Planted]) -> None:
        self._by_text = {p.text: p for p in planted}
        # However a turn is framed (a "[Name]" prefix, a structured record), its text is in it.
        self._any = re.compile("|".join(re.escape(t) for t in sorted(self._by_text, key=len)[::-1]))
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> str:
        lines: list[str] = []
        notes: list[str] = []
        chatter = 0
        for turn in request.turns:
            if turn.get("role") != "user":
                continue
            speaker, text = _speaker_and_text(message_text(turn).strip())
            match = self._any.search(text) if self._by_text else None
            found = self._by_text.get(match[0]) if match else None
            if found is not None:
                who = speaker or found.speaker
                lines.append(f"{_LINE_KIND[found.kind]} | - | {who} | {found.text}")
                continue
            chatter += 1
            if chatter % CHATTER_LINES_PER_NOTE == 0 and len(notes) < MAX_NOTES_PER_CALL:
                words = " ".join(text.split()[:NOTE_WORDS])
                notes.append(f"NOTE | - | {speaker or '-'} | {words}")
        self.calls += 1
        return "\n".join(self.degrade(lines) + notes) or "NOTE | - | - | Chatter only."

    def degrade(self, lines: list[str]) -> list[str]:
        return lines


class LossySummarizer(PerfectSummarizer):
    """The perfect one, then each planted entry it was asked to write is lost with probability
    `p`, per call: what a free-form LLM drops. What the memory holds is carried by code."""

    name = "lossy"

    def __init__(self, planted: Iterable[Planted], *, p: float, seed: int | str) -> None:
        super().__init__(planted)
        self._p = p
        self._rng = random.Random(f"lossy:{seed}")

    def degrade(self, lines: list[str]) -> list[str]:
        return [line for line in lines if self._rng.random() >= self._p]


class FailingSummarizer:
    """Raises on every call: the compressor must fall back to the deterministic summary."""

    name = "failing"

    def __init__(self) -> None:
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        raise RuntimeError("scripted summarizer failure")

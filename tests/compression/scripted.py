"""Scripted summarizers: deterministic stand-ins for an LLM, recording what they were asked."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from compactbot.compression.summarizer import SummaryRequest
from compactbot.compression.transcript import content_text

# Tests plant facts as "FACT-<n>: <text>." sentences; a perfect summarizer keeps every one.
PLANTED = re.compile(r"FACT-\d+: [^.\n\]]*")


def request_text(request: SummaryRequest) -> str:
    """Everything a summarizer could read in a request, for leak checks."""
    parts = [request.previous_summary or "", request.focus_topic or ""]
    for turn in request.turns:
        parts.append(content_text(turn.get("content")))
        for call in turn.get("tool_calls") or []:
            parts.append(json.dumps(call, ensure_ascii=False))
    return "\n".join(parts)


class PerfectSummarizer:
    """Copies every planted fact of the previous summary and the new turns, in order."""

    def __init__(self, extra: str = "") -> None:
        self.requests: list[SummaryRequest] = []
        self.extra = extra

    async def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        facts = PLANTED.findall(request_text(request))
        lines = list(dict.fromkeys(fact.strip() for fact in facts))
        body = "## Key facts and exact values\n" + "\n".join(f"- {line}" for line in lines)
        return body + (f"\n{self.extra}" if self.extra else "")


class FailingSummarizer:
    """Raises the given exception on every call."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.requests: list[SummaryRequest] = []

    async def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        raise self.exc


class FixedSummarizer:
    """Returns a fixed value (empty, blank or None included) on every call."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.requests: list[SummaryRequest] = []

    async def summarize(self, request: SummaryRequest) -> Any:
        self.requests.append(request)
        return self.value


# ----- transcript builders -------------------------------------------------------------------

FILLER = (
    "we talked about the release schedule and the office move and lunch plans again "
    "and somebody asked about the printer on the third floor which still jams "
)


def system(text: str = "You are a helpful bot in a group chat.") -> dict[str, Any]:
    return {"role": "system", "content": text}


def user(name: str, text: str) -> dict[str, Any]:
    return {"role": "user", "content": f"[{name}] {text}"}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def image_user(name: str, text: str, url: str = "data:image/png;base64,AAAA") -> dict[str, Any]:
    return {
        "role": "user",
        "content": [
            {"type": "text", "text": f"[{name}] {text}"},
            {"type": "image_url", "image_url": {"url": url}},
        ],
    }


def tool_round(
    ids: list[str],
    *,
    name: str = "terminal",
    args: Mapping[str, Any] | None = None,
    result: str = "",
) -> list[dict[str, Any]]:
    """An assistant turn calling tools in parallel, followed by one result per call."""
    arguments = json.dumps(dict(args or {"command": "ls"}))
    calls = [
        {"id": i, "type": "function", "function": {"name": name, "arguments": arguments}}
        for i in ids
    ]
    return [{"role": "assistant", "content": None, "tool_calls": calls}] + [
        {"role": "tool", "tool_call_id": i, "content": result or f"output of {i}"} for i in ids
    ]


def group_chat(turns: int, *, start: int = 0, filler: int = 2) -> list[dict[str, Any]]:
    """`turns` user/assistant exchanges; turn k plants "FACT-k"."""
    names = ("Alice", "Bob", "Carol")
    out: list[dict[str, Any]] = []
    for k in range(start, start + turns):
        out.append(user(names[k % 3], f"FACT-{k}: value {k * 7} noted. " + FILLER * filler))
        out.append(assistant(f"Got it, turn {k}. " + FILLER * filler))
    return out


class FakeClock:
    """An injectable clock the test advances by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ScriptedSummarizer:
    """Plays `steps` in order: an exception is raised, anything else returned; then repeats last."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.requests: list[SummaryRequest] = []

    async def summarize(self, request: SummaryRequest) -> Any:
        self.requests.append(request)
        step = self.steps.pop(0) if len(self.steps) > 1 else self.steps[0]
        if isinstance(step, BaseException):
            raise step
        return step

"""The seam between the compressor and whatever writes summaries (an LLM, a script, a test)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class SummaryError(Exception):
    """Root of summarizer failures."""


class SummaryAuthError(SummaryError):
    """Credentials rejected or quota exhausted: retrying will not help; keep the transcript."""


class SummaryNetworkError(SummaryError):
    """The summarizer could not be reached (connection refused, reset, timeout)."""


class SummaryTransientError(SummaryError):
    """Rate limited (429), a 5xx or a provider timeout: the model will answer later (SPEC 6.4)."""


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """Everything a summarizer needs; `turns` are redacted, truncated OpenAI-format messages,
    read-only: a turn shown as it is is the caller's own message, not a copy."""

    turns: Sequence[Mapping[str, Any]]
    previous_summary: str | None
    focus_topic: str | None
    budget_tokens: int
    today: dt.date
    participants: Sequence[str] = ()
    pins: Sequence[str] = ()
    language: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The memory's current entries in the line format (compression.memory_format), "" while
    # it is empty; None from callers without a memory. The reply adds to it, not restates it.
    memory: str | None = None


class Summarizer(Protocol):
    async def summarize(self, request: SummaryRequest) -> str: ...

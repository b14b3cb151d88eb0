"""What every doctor check returns: findings, one printed line each."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from bot.config import Config

Status = Literal["ok", "fix", "skip"]
_MARKS: dict[Status, str] = {"ok": "ok  ", "fix": "FIX ", "skip": "skip"}


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of the report: what is fine, what to fix, or why a check did not run."""

    area: str  # config | store | llm | telegram | discord
    status: Status
    text: str

    def line(self) -> str:
        return f"{_MARKS[self.status]}  {self.area}: {self.text}"


def ok(area: str, text: str) -> Finding:
    return Finding(area, "ok", text)


def fix(area: str, text: str) -> Finding:
    return Finding(area, "fix", text)


def skip(area: str, text: str) -> Finding:
    return Finding(area, "skip", text)


# A check gets the configuration and whether --live was given (a real completion may be sent).
Check = Callable[[Config, bool], Awaitable[list[Finding]]]


@dataclass(frozen=True, slots=True)
class NamedCheck:
    area: str
    run: Check

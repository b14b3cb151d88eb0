"""What every doctor check returns: findings, one printed line each."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from compactbot.bot.settings.config import Config

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


def shown_url(url: str) -> str:
    """`url` without any user:password part, fit for a report line."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


# A check gets the configuration and whether --live was given (a real completion may be sent).
Check = Callable[[Config, bool], Awaitable[list[Finding]]]


@dataclass(frozen=True, slots=True)
class NamedCheck:
    area: str
    run: Check

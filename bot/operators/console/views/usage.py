"""Tokens and model calls per day and purpose, for one chat or every chat the viewer sees."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass

from compactbot.bot.operators.console.deps import ConsoleDeps
from compactbot.bot.store.base import ChatRecord, UsageRow

PERIODS_DAYS = (7, 30, 90)
# How the pages name each usage purpose the store records.
PURPOSE_LABELS = {"reply": "replies", "compression": "summaries", "media": "media"}
DEFAULT_DAYS = 30


@dataclass(frozen=True, slots=True)
class UsageCell:
    tokens: int = 0
    calls: int = 0


@dataclass(frozen=True, slots=True)
class ChatTotal:
    chat: ChatRecord
    tokens: int
    calls: int


@dataclass(frozen=True, slots=True)
class UsageReport:
    days: list[str]  # every day of the period, oldest first
    purposes: list[str]
    cells: dict[tuple[str, str], UsageCell]  # (day, purpose)
    per_chat: list[ChatTotal]  # most tokens first

    def cell(self, day: str, purpose: str) -> UsageCell:
        return self.cells.get((day, purpose), UsageCell())

    def tokens_by_purpose(self) -> dict[str, dict[str, int]]:
        return {p: {d: self.cell(d, p).tokens for d in self.days} for p in self.purposes}

    def total(self, purpose: str) -> UsageCell:
        cells = [self.cell(d, purpose) for d in self.days]
        return UsageCell(sum(c.tokens for c in cells), sum(c.calls for c in cells))


def period_days(raw: str | None) -> int:
    """A `?days=` value as one of the offered periods, else the default."""
    return next((days for days in PERIODS_DAYS if raw == str(days)), DEFAULT_DAYS)


async def usage_report(deps: ConsoleDeps, chats: list[ChatRecord], days: int) -> UsageReport:
    today = dt.datetime.fromtimestamp(deps.now(), dt.UTC).date()
    period = [(today - dt.timedelta(days=n)).isoformat() for n in range(days - 1, -1, -1)]
    since = period[0]
    cells: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    per_chat: list[ChatTotal] = []
    for chat in chats:
        rows: list[UsageRow] = await deps.services.usage.usage(chat.key, since)
        for row in rows:
            cell = cells[(row.day, row.purpose)]
            cell[0] += row.prompt_tokens + row.completion_tokens
            cell[1] += row.calls
        per_chat.append(
            ChatTotal(
                chat,
                sum(r.prompt_tokens + r.completion_tokens for r in rows),
                sum(r.calls for r in rows),
            )
        )
    per_chat.sort(key=lambda t: (-t.tokens, t.chat.key))
    purposes = sorted({purpose for _, purpose in cells}, key=_purpose_order)
    return UsageReport(
        days=period,
        purposes=purposes,
        cells={key: UsageCell(v[0], v[1]) for key, v in cells.items()},
        per_chat=per_chat,
    )


def _purpose_order(purpose: str) -> tuple[int, str]:
    known = ("reply", "compression", "media")
    return (known.index(purpose) if purpose in known else len(known), purpose)

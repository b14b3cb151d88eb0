"""Limits every worker shares (SPEC 15): rate windows, notice windows and the admin cache.

They live in the store, so N workers on one database enforce one limit, not N. Each check is one
atomic step of the database (one statement, or one transaction of the single SQLite writer):
two workers asking at once cannot both pass a limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol

RATE_WINDOW_SECONDS = 60.0
# Expired limit rows are deleted at most this often, by whichever write comes next.
LIMITS_PRUNE_INTERVAL_SECONDS = 600.0
# A day's spend of a chat with its threads and forum topics (`chat_key` or a child of it).
CHAT_SPEND_WHERE = (
    "day = {day} AND (chat_key = {chat} OR chat_key IN ("
    "SELECT key FROM chats WHERE parent_key = {chat}))"
)


@dataclass(frozen=True, slots=True)
class DaySpend:
    """Tokens (prompt + completion) spent on one UTC day."""

    chat: int  # by the chat and its threads
    member: int  # by one member there
    total: int  # by every chat (0 when not asked for)


class SharedLimits(Protocol):
    """The store's part of the limits in bot/ingress/limits.py; `now` is epoch seconds."""

    async def rate_hit(self, key: str, per_minute: int, now: float) -> bool:
        """Count an attempt under `key` unless `per_minute` were counted in the last minute.

        True when it was counted (allowed); `per_minute` <= 0 allows without counting.
        """
        ...

    async def notice_first(self, scope: str, key: str, interval_seconds: float, now: float) -> bool:
        """True, and remembered, when nothing was said for (scope, key) within the interval."""
        ...

    async def notice_reset(self, scope: str) -> None:
        """Forget every notice said under `scope`: each is said again next time."""
        ...

    async def day_spend(
        self, chat_key: str, user_id: str | None, day: str, *, total: bool
    ) -> DaySpend:
        """What `chat_key` (a chat, not a thread), `user_id` in it and, if `total`, every chat
        spent on `day`, read from the usage every worker records."""
        ...

    async def cached_admin(self, key: str, now: float) -> bool | None:
        """The admin answer cached for `key`; None when there is none or it has expired."""
        ...

    async def cache_admin(self, key: str, is_admin: bool, expires_at: float) -> None: ...


def limit_key(*parts: str) -> str:
    """One key made of several parts, unambiguous whatever characters the parts hold."""
    return json.dumps(parts, ensure_ascii=False, separators=(",", ":"))

"""Per-member rate limits in groups, notice windows and per-chat daily token budgets.

All of them are read from the store, so several workers on one database enforce one limit.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable

from compactbot.bot.store.base import Store
from compactbot.bot.store.shared_limits import RATE_WINDOW_SECONDS as RATE_WINDOW_SECONDS
from compactbot.bot.store.shared_limits import SharedLimits, limit_key

log = logging.getLogger(__name__)


class RateLimiter:
    """Sliding one-minute window per key, counted in the store so every worker shares it."""

    def __init__(self, store: SharedLimits, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    async def allow(self, key: tuple[str, ...], per_minute: int) -> bool:
        """Records the attempt when it is allowed; a store that cannot answer allows it."""
        if per_minute <= 0:
            return True
        try:
            return await self._store.rate_hit(limit_key(*key), per_minute, self._clock())
        except Exception as err:
            # The message is stored already: refusing it unanswered would drop a question.
            log.warning("rate limit unavailable, allowing: %s", type(err).__name__)
            return True


class NoticeGate:
    """Lets a refusal be said once per key per interval, on all workers together."""

    def __init__(
        self,
        store: SharedLimits,
        scope: str,
        interval_seconds: float,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._scope = scope
        self._interval = interval_seconds
        self._clock = clock

    async def first(self, key: tuple[str, ...]) -> bool:
        """True when nothing was said for `key` within the interval (and records saying it)."""
        try:
            return await self._store.notice_first(
                self._scope, limit_key(*key), self._interval, self._clock()
            )
        except Exception as err:
            log.warning("notice window unavailable, saying it: %s", type(err).__name__)
            return True


def utc_day(timestamp: float | None = None) -> str:
    moment = dt.datetime.fromtimestamp(timestamp if timestamp is not None else time.time(), dt.UTC)
    return moment.date().isoformat()


async def budget_exceeded(
    store: Store, chat_key: str, daily_tokens: int, *, now: float | None = None
) -> bool:
    """True once today's prompt + completion tokens (replies and compression) reach the budget.

    Usage is read from the store each time, so it counts what every worker spent.
    """
    if daily_tokens <= 0:
        return False
    today = utc_day(now)
    used = sum(
        row.prompt_tokens + row.completion_tokens
        for row in await store.usage(chat_key, today)
        if row.day == today
    )
    return used >= daily_tokens

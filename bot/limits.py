"""Per-user message rate limits in groups and per-chat daily token budgets."""

from __future__ import annotations

import datetime as dt
import time
from collections import deque
from collections.abc import Callable, Hashable

from bot.store.base import Store

RATE_WINDOW_SECONDS = 60.0
# Forget idle keys after this many checks so a long-running process does not grow without bound.
SWEEP_EVERY_CHECKS = 1_000


class RateLimiter:
    """Sliding one-minute window per key; `allow` records the attempt when it is allowed."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._hits: dict[Hashable, deque[float]] = {}
        self._checks = 0

    def allow(self, key: Hashable, per_minute: int) -> bool:
        if per_minute <= 0:
            return True
        now = self._clock()
        hits = self._hits.setdefault(key, deque())
        while hits and now - hits[0] >= RATE_WINDOW_SECONDS:
            hits.popleft()
        self._checks += 1
        if self._checks % SWEEP_EVERY_CHECKS == 0:
            self._sweep(now)
        if len(hits) >= per_minute:
            return False
        hits.append(now)
        return True

    def _sweep(self, now: float) -> None:
        idle = [k for k, v in self._hits.items() if not v or now - v[-1] >= RATE_WINDOW_SECONDS]
        for key in idle:
            del self._hits[key]


class NoticeGate:
    """Lets a refusal be said once per key per interval instead of to every refused message."""

    def __init__(self, interval_seconds: float, *, clock: Callable[[], float] = time.time) -> None:
        self._interval = interval_seconds
        self._clock = clock
        self._said: dict[Hashable, float] = {}
        self._checks = 0

    def first(self, key: Hashable) -> bool:
        """True when nothing was said for `key` within the interval (and records saying it)."""
        now = self._clock()
        self._checks += 1
        if self._checks % SWEEP_EVERY_CHECKS == 0:
            self._said = {k: t for k, t in self._said.items() if now - t < self._interval}
        last = self._said.get(key)
        if last is not None and now - last < self._interval:
            return False
        self._said[key] = now
        return True


def utc_day(timestamp: float | None = None) -> str:
    moment = dt.datetime.fromtimestamp(timestamp if timestamp is not None else time.time(), dt.UTC)
    return moment.date().isoformat()


async def budget_exceeded(
    store: Store, chat_key: str, daily_tokens: int, *, now: float | None = None
) -> bool:
    """True once today's prompt + completion tokens (replies and compression) reach the budget."""
    if daily_tokens <= 0:
        return False
    today = utc_day(now)
    used = sum(
        row.prompt_tokens + row.completion_tokens
        for row in await store.usage(chat_key, today)
        if row.day == today
    )
    return used >= daily_tokens

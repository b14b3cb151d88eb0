"""An APScheduler trigger that fires when a chat's quiet window opens.

`CronTrigger(hour, minute, timezone)` would fire at a different instant than `scheduler.windows`
opens the window on a spring-forward night (it maps a skipped 02:30 to 03:30, the window opens at
03:00), so the trigger asks `next_window_start` and the DST rule lives in one place.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from apscheduler.triggers.base import BaseTrigger

from compactbot.bot.settings.values import TimeWindow
from compactbot.scheduler.windows import next_window_start

# APScheduler asks for the fire time after `previous`; step past it so a fire is never repeated.
_AFTER_PREVIOUS = timedelta(microseconds=1)


class WindowStartTrigger(BaseTrigger):
    """Fires at each start of `window` in `zone`, delayed by up to `jitter_seconds`."""

    __slots__ = ("jitter_seconds", "window", "zone")

    def __init__(self, window: TimeWindow, zone: ZoneInfo, *, jitter_seconds: float = 0.0) -> None:
        if jitter_seconds < 0:
            raise ValueError(f"jitter_seconds must be >= 0, got {jitter_seconds}")
        self.window = window
        self.zone = zone
        self.jitter_seconds = jitter_seconds

    def get_next_fire_time(
        self, previous_fire_time: datetime | None, now: datetime
    ) -> datetime | None:
        start_from = now
        if previous_fire_time is not None:
            # Like CronTrigger: counting from the previous fire, not from now, returns the runs
            # missed while the loop was busy, so APScheduler's misfire and coalesce rules see them.
            start_from = previous_fire_time + _AFTER_PREVIOUS
        start = next_window_start(self.window, self.zone, start_from)
        if self.jitter_seconds:
            # De-synchronises chats that share a window so they do not all start one second.
            start += timedelta(seconds=random.uniform(0, self.jitter_seconds))
        return start

    def same_schedule(self, other: object) -> bool:
        """True when `other` fires at the same times (jitter aside), so it need not be replaced."""
        return isinstance(other, WindowStartTrigger) and (
            self.window,
            self.zone.key,
            self.jitter_seconds,
        ) == (other.window, other.zone.key, other.jitter_seconds)

    def __str__(self) -> str:
        return f"window[{self.window} {self.zone.key}]"

    def __repr__(self) -> str:
        return f"<WindowStartTrigger (window='{self.window}', zone='{self.zone.key}')>"

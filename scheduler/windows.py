"""A chat's daily quiet window as instants: is it open, when does it close, when does it next open.

Pure functions of (window, zone, now); `now` is a timezone-aware datetime and results are in UTC.

Daylight-saving rule, the one rule for both ends of a window: a boundary is **the first instant at
which the chat's wall clock reads that date and time or later**.

* Spring forward (Berlin, 2026-03-29, 02:00 → 03:00): a 02:00–05:00 window opens at 03:00 CEST,
  the first valid instant after its nominal start, and is two hours long that night. A wall time
  inside the skipped hour (02:30) also resolves to 03:00, not to 03:30 as PEP 495's fold=0 would
  have it. A window lying wholly inside the skipped hour does not open that night.
* Fall back (Berlin, 2026-10-25, 03:00 → 02:00): 02:00 happens twice and the window opens at the
  first one, so 02:00–05:00 is four hours long that night. An end inside the repeated hour is also
  its first occurrence; the wall clock re-entering the range an hour later does not reopen it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.settings.config import Config
from compactbot.bot.settings.values import TimeWindow

# Local days examined around `now`: yesterday's window may wrap past midnight into today, and
# tomorrow's may be empty (a window inside a skipped hour), so the next start can be two days off.
_DAYS_BEFORE = 1
_DAYS_AFTER = 2


def in_window(window: TimeWindow, zone: ZoneInfo, now: datetime) -> bool:
    return current_window(window, zone, now) is not None


def window_end(window: TimeWindow, zone: ZoneInfo, now: datetime) -> datetime | None:
    """The end of the window open at `now`; None when it is closed."""
    current = current_window(window, zone, now)
    return current[1] if current is not None else None


def current_window(
    window: TimeWindow, zone: ZoneInfo, now: datetime
) -> tuple[datetime, datetime] | None:
    """(start, end) of the window open at `now`, or None."""
    now = _aware(now)
    for start, end in _occurrences(window, zone, now):
        if start <= now < end:
            return start, end
    return None


def next_window_start(window: TimeWindow, zone: ZoneInfo, now: datetime) -> datetime:
    """The first start of the window at or after `now`."""
    now = _aware(now)
    return min(start for start, _ in _occurrences(window, zone, now) if start >= now)


def occurrence(window: TimeWindow, zone: ZoneInfo, day: date) -> tuple[datetime, datetime]:
    """The window that opens on local `day`; start == end when DST swallowed it that night."""
    start = boundary(day, window.start, zone)
    end_day = day + timedelta(days=1) if window.crosses_midnight else day
    end = max(start, boundary(end_day, window.end, zone))
    return start, end


def boundary(day: date, moment: time, zone: ZoneInfo) -> datetime:
    """The first instant (UTC) at which the wall clock in `zone` reads `day moment` or later."""
    wall = datetime.combine(day, moment)
    # fold=0 is the first of two repeated wall times, which is the one we want.
    instant = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if instant.astimezone(zone).replace(tzinfo=None) == wall:
        return instant
    return _gap_end(wall, zone)


def next_run_text(settings: ChatSettings, config: Config, now: datetime | None = None) -> str:
    """The chat's next overnight run as local time ("2026-12-01 02:00 Europe/Berlin"), or "off"."""
    if not settings.overnight or not config.compression.enabled:
        return "off"
    zone = settings.zone
    start = next_window_start(settings.overnight_window, zone, now or datetime.now(UTC))
    return f"{start.astimezone(zone):%Y-%m-%d %H:%M} {settings.timezone}"


def _occurrences(
    window: TimeWindow, zone: ZoneInfo, now: datetime
) -> Iterator[tuple[datetime, datetime]]:
    today = now.astimezone(zone).date()
    for offset in range(-_DAYS_BEFORE, _DAYS_AFTER + 1):
        start, end = occurrence(window, zone, today + timedelta(days=offset))
        if start < end:
            yield start, end


def _gap_end(wall: datetime, zone: ZoneInfo) -> datetime:
    """The transition instant that skipped the nonexistent wall time `wall`.

    PEP 495 maps a skipped time to one instant before the jump (fold=1, new offset) and one after
    (fold=0, old offset); the transition lies between them, at a whole second, so bisect.
    """
    before = int(wall.replace(tzinfo=zone, fold=1).timestamp())
    after = int(wall.replace(tzinfo=zone, fold=0).timestamp())
    offset_after = datetime.fromtimestamp(after, zone).utcoffset()
    while after - before > 1:
        middle = (before + after) // 2
        if datetime.fromtimestamp(middle, zone).utcoffset() == offset_after:
            after = middle
        else:
            before = middle
    return datetime.fromtimestamp(after, UTC)


def _aware(now: datetime) -> datetime:
    if now.tzinfo is None or now.utcoffset() is None:
        # A naive time would silently be read as the machine's local zone.
        raise ValueError("now must be timezone-aware")
    return now.astimezone(UTC)

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from compactbot.bot.settings.chat_settings import resolve
from compactbot.bot.settings.values import TimeWindow
from compactbot.scheduler.trigger import WindowStartTrigger
from compactbot.scheduler.windows import in_window, next_run_text, next_window_start, window_end
from tests.harness import make_config

BERLIN = ZoneInfo("Europe/Berlin")
NIGHT = TimeWindow.parse("02:00-05:00")
AROUND_MIDNIGHT = TimeWindow.parse("23:00-01:00")


def berlin(text: str, *, fold: int = 0) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=BERLIN, fold=fold)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("moment", "due"),
    [
        (berlin("2026-06-10 01:59"), False),
        (berlin("2026-06-10 02:00"), True),
        (berlin("2026-06-10 02:37"), True),
        (berlin("2026-06-10 04:59"), True),
        (berlin("2026-06-10 05:00"), False),
    ],
)
def test_berlin_night_window_is_due_from_two_until_five_local(moment: datetime, due: bool) -> None:
    assert in_window(NIGHT, BERLIN, moment) is due


@pytest.mark.parametrize(
    ("moment", "due"),
    [
        (utc("2026-03-29 00:59"), False),  # 01:59 CET, just before the clocks jump
        (utc("2026-03-29 01:00"), True),  # 03:00 CEST: 02:xx never happens, the window opens here
        (utc("2026-03-29 02:59"), True),  # 04:59 CEST
        (utc("2026-03-29 03:00"), False),  # 05:00 CEST
        (berlin("2026-03-30 02:15"), True),  # the next night is a normal one, in CEST
    ],
)
def test_window_across_march_dst_change_opens_at_first_valid_instant(
    moment: datetime, due: bool
) -> None:
    assert in_window(NIGHT, BERLIN, moment) is due


def test_march_dst_night_window_is_two_hours_long() -> None:
    start = next_window_start(NIGHT, BERLIN, berlin("2026-03-28 12:00"))
    end = window_end(NIGHT, BERLIN, start)
    assert start == utc("2026-03-29 01:00")
    assert end is not None and end - start == timedelta(hours=2)


def test_window_start_inside_the_skipped_hour_resolves_to_its_end() -> None:
    window = TimeWindow.parse("02:30-05:00")
    assert next_window_start(window, BERLIN, berlin("2026-03-28 12:00")) == utc("2026-03-29 01:00")


@pytest.mark.parametrize(
    ("moment", "due"),
    [
        (utc("2026-10-24 23:59"), False),  # 01:59 CEST
        (utc("2026-10-25 00:00"), True),  # the first 02:00 (CEST)
        (berlin("2026-10-25 02:30", fold=1), True),  # the repeated hour, now CET
        (utc("2026-10-25 03:59"), True),  # 04:59 CET
        (utc("2026-10-25 04:00"), False),  # 05:00 CET
    ],
)
def test_window_across_october_dst_change_is_due_from_the_first_two_oclock(
    moment: datetime, due: bool
) -> None:
    assert in_window(NIGHT, BERLIN, moment) is due


def test_october_dst_night_window_is_four_hours_long() -> None:
    start = next_window_start(NIGHT, BERLIN, berlin("2026-10-24 12:00"))
    assert start == utc("2026-10-25 00:00")
    assert window_end(NIGHT, BERLIN, start) == utc("2026-10-25 04:00")


@pytest.mark.parametrize(
    ("moment", "due"),
    [
        (berlin("2026-06-10 22:59"), False),
        (berlin("2026-06-10 23:00"), True),
        (berlin("2026-06-10 23:30"), True),
        (berlin("2026-06-11 00:30"), True),
        (berlin("2026-06-11 01:00"), False),
    ],
)
def test_window_crossing_midnight_is_due_on_both_sides(moment: datetime, due: bool) -> None:
    assert in_window(AROUND_MIDNIGHT, BERLIN, moment) is due


def test_window_crossing_midnight_ends_the_next_day() -> None:
    assert window_end(AROUND_MIDNIGHT, BERLIN, berlin("2026-06-10 23:30")) == berlin(
        "2026-06-11 01:00"
    )
    assert window_end(AROUND_MIDNIGHT, BERLIN, berlin("2026-06-11 00:30")) == berlin(
        "2026-06-11 01:00"
    )


def test_closed_window_has_no_end() -> None:
    assert window_end(NIGHT, BERLIN, berlin("2026-06-10 12:00")) is None


def test_next_start_is_tomorrow_once_tonight_has_begun() -> None:
    assert next_window_start(NIGHT, BERLIN, berlin("2026-06-10 02:01")) == berlin(
        "2026-06-11 02:00"
    )


def test_naive_now_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        in_window(NIGHT, BERLIN, datetime(2026, 6, 10, 2, 30))


def test_trigger_fires_when_the_window_opens_across_dst() -> None:
    trigger = WindowStartTrigger(NIGHT, BERLIN)
    spring = trigger.get_next_fire_time(None, berlin("2026-03-28 12:00"))
    assert spring == utc("2026-03-29 01:00")
    assert trigger.get_next_fire_time(spring, spring) == berlin("2026-03-30 02:00")
    autumn = trigger.get_next_fire_time(None, berlin("2026-10-24 12:00"))
    assert autumn == utc("2026-10-25 00:00")
    assert trigger.get_next_fire_time(autumn, autumn) == berlin("2026-10-26 02:00")


def test_next_run_text_shows_local_time_and_zone(tmp_path) -> None:
    config = make_config(tmp_path)
    settings = resolve({"timezone": "Europe/Berlin"}, None, config)
    assert next_run_text(settings, config, berlin("2026-11-30 12:00")) == (
        "2026-12-01 02:00 Europe/Berlin"
    )


def test_next_run_text_is_off_when_the_chat_turned_overnight_off(tmp_path) -> None:
    config = make_config(tmp_path)
    settings = resolve({"overnight": "off"}, None, config)
    assert next_run_text(settings, config, berlin("2026-11-30 12:00")) == "off"

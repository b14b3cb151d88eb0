from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from compactbot.bot.app import App
from compactbot.compression.state import CompressorState
from compactbot.scheduler.overnight import run_overnight
from compactbot.scheduler.selection import select_sessions
from tests.harness import make_config
from tests.scheduler.builders import FakeClock, fill_session

SMALL_WINDOW = {"COMPACTBOT_CONTEXT_LENGTH": "8000"}
EVENING = datetime(2026, 6, 1, 0, 30, tzinfo=UTC)
NIGHT = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)  # inside the default 02:00-05:00 UTC window
# About 6,500 of the 8,000 tokens: above min_ratio, below hygiene, and big enough that the
# deterministic summary is smaller than what it replaces.
BIG = 70


async def test_only_big_idle_unlocked_sessions_out_of_cooldown_are_compressed(
    tmp_path: Path,
) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        services, store = app.services, app.services.store
        big_idle = await fill_session(services, "test:idle", messages=BIG)
        active = await fill_session(services, "test:active", messages=BIG)
        await fill_session(services, "test:small", messages=8)
        cooling = await fill_session(services, "test:cooldown", messages=BIG)
        locked = await fill_session(services, "test:locked", messages=BIG)
        clock.now = NIGHT.timestamp() - 600
        await fill_session(services, "test:active", messages=1)
        await store.save_compressor_state(cooling, CompressorState(cooldown_until=clock.now + 7200))
        assert await store.acquire_lock(locked, "another-process:turn", 7200)
        clock.now = NIGHT.timestamp()
        assert (await store.get_session(active)).active_tokens > 0.3 * 8000

        reports = await run_overnight(services, jitter=lambda: 0.0)

        assert [(key, report.outcome) for key, report in reports] == [("test:idle", "compressed")]
        events = await store.list_compression_events()
        assert [(e.chat_key, e.trigger) for e in events] == [("test:idle", "overnight")]
        assert (await store.get_session(big_idle)).active_messages < BIG


async def test_biggest_session_is_selected_first(tmp_path: Path) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        await fill_session(app.services, "test:big", messages=BIG)
        await fill_session(app.services, "test:bigger", messages=BIG + 10)
        clock.now = NIGHT.timestamp()

        candidates = await select_sessions(app.services, clock())

        assert [c.chat_key for c in candidates] == ["test:bigger", "test:big"]


async def test_nothing_is_selected_outside_the_window_unless_it_is_ignored(tmp_path: Path) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        await fill_session(app.services, "test:big", messages=BIG)
        clock.now = datetime(2026, 6, 1, 12, 0, tzinfo=UTC).timestamp()

        assert await select_sessions(app.services, clock()) == []
        forced = await select_sessions(app.services, clock(), ignore_window=True)
        assert [c.chat_key for c in forced] == ["test:big"]
        assert forced[0].window_end is None


async def test_chat_with_overnight_off_is_never_selected(tmp_path: Path) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        await fill_session(app.services, "test:big", messages=BIG)
        await app.services.store.set_chat_setting("test:big", "overnight", "off")
        clock.now = NIGHT.timestamp()

        assert await select_sessions(app.services, clock(), ignore_window=True) == []


async def test_chat_window_is_read_in_the_chat_time_zone(tmp_path: Path) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        await fill_session(app.services, "test:tokyo", messages=BIG)
        await app.services.store.set_chat_setting("test:tokyo", "timezone", "Asia/Tokyo")
        clock.now = datetime(2026, 6, 1, 18, 0, tzinfo=UTC).timestamp()  # 03:00 in Tokyo

        candidates = await select_sessions(app.services, clock())

        assert [c.chat_key for c in candidates] == ["test:tokyo"]
        assert candidates[0].window_end == datetime(2026, 6, 1, 20, 0, tzinfo=UTC)

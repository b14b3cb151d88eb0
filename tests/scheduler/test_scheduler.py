from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from compactbot.bot.app import App
from compactbot.bot.compaction.session_compactor import SessionCompactor
from compactbot.bot.settings.config import Config
from compactbot.bot.settings.values import TimeWindow
from compactbot.compression.summarizer import SummaryAuthError, SummaryRequest
from compactbot.scheduler.overnight import OvernightScheduler
from compactbot.scheduler.windows import next_window_start
from tests.harness import RecordingAdapter, group_message, make_config
from tests.scheduler.builders import FakeClock, GatedSummarizer, fill_session

UTC_ZONE = ZoneInfo("UTC")
BIG = 70  # about 6,500 of 8,000 tokens


def quiet_config(tmp_path: Path) -> Config:
    """8,000-token window and no jitter, so next runs are exact."""
    yaml = tmp_path / "compactbot.yaml"
    yaml.write_text("overnight:\n  jitter_seconds: 0\n", encoding="utf-8")
    return make_config(
        tmp_path, {"COMPACTBOT_CONTEXT_LENGTH": "8000", "COMPACTBOT_CONFIG": str(yaml)}
    )


def window_around(moment: datetime, *, starts_in: timedelta, hours: int = 1) -> TimeWindow:
    start = moment + starts_in
    return TimeWindow.parse(f"{start:%H:%M}-{start + timedelta(hours=hours):%H:%M}")


async def test_config_overnight_window_change_moves_next_run_without_restart(
    tmp_path: Path,
) -> None:
    async with App(quiet_config(tmp_path)) as app:
        adapter = RecordingAdapter(admins={"admin"})
        await app.gateway.handle(group_message("hello", chat_id="g1", addressed=False), adapter)
        scheduler = OvernightScheduler(app.services, app.gateway)
        await scheduler.start()
        try:
            now = datetime.now(UTC)
            before = scheduler.next_run("test:g1")
            assert before == next_window_start(TimeWindow.parse("02:00-05:00"), UTC_ZONE, now)
            window = window_around(now, starts_in=timedelta(hours=2, minutes=7))

            command = f"/config overnight_window {window}"
            await app.gateway.handle(group_message(command, author="Admin", chat_id="g1"), adapter)
            await asyncio.wait_for(app.gateway.join(), 5)

            after = scheduler.next_run("test:g1")
            assert after == next_window_start(window, UTC_ZONE, now)
            assert after != before
        finally:
            await scheduler.stop()


async def test_config_overnight_off_removes_the_chat_schedule(tmp_path: Path) -> None:
    async with App(quiet_config(tmp_path)) as app:
        adapter = RecordingAdapter(admins={"admin"})
        await app.gateway.handle(group_message("hello", chat_id="g1", addressed=False), adapter)
        scheduler = OvernightScheduler(app.services, app.gateway)
        await scheduler.start()
        try:
            assert scheduler.next_run("test:g1") is not None
            command = "/config overnight off"
            await app.gateway.handle(group_message(command, author="Admin", chat_id="g1"), adapter)
            await asyncio.wait_for(app.gateway.join(), 5)

            assert scheduler.next_run("test:g1") is None
        finally:
            await scheduler.stop()


async def test_schedule_is_rebuilt_from_stored_settings_after_a_restart(tmp_path: Path) -> None:
    config = quiet_config(tmp_path)
    async with App(config) as app:
        await app.services.store.upsert_chat("test:g1", "test")
        await app.services.store.set_chat_setting("test:g1", "timezone", "Europe/Berlin")
        await app.services.store.set_chat_setting("test:g1", "overnight_window", "23:00-01:00")
    async with App(config) as app:
        scheduler = OvernightScheduler(app.services, app.gateway)
        await scheduler.start()
        try:
            berlin = ZoneInfo("Europe/Berlin")
            expected = next_window_start(TimeWindow.parse("23:00-01:00"), berlin, datetime.now(UTC))
            assert scheduler.next_run("test:g1") == expected
            assert scheduler.next_run("test:g1").astimezone(berlin).hour == 23  # type: ignore[union-attr]
        finally:
            await scheduler.stop()


async def test_session_idle_later_in_the_window_gets_a_follow_up_pass(tmp_path: Path) -> None:
    # A night far in the future, so nothing fires on its own while the test runs.
    clock = FakeClock.at(datetime(2030, 6, 1, 0, 30, tzinfo=UTC))
    async with App(quiet_config(tmp_path), clock=clock) as app:
        await fill_session(app.services, "test:g1", messages=BIG)
        clock.now = datetime(2030, 6, 1, 2, 50, tzinfo=UTC).timestamp()
        await fill_session(app.services, "test:g1", messages=1)
        clock.now = datetime(2030, 6, 1, 3, 0, tzinfo=UTC).timestamp()
        scheduler = OvernightScheduler(app.services, app.gateway, jitter=lambda: 0.0)
        await scheduler.start()
        try:
            attempts = await scheduler.run_pass("test:g1")

            assert attempts == []
            assert scheduler.next_follow_up("test:g1") == datetime(2030, 6, 1, 3, 50, tzinfo=UTC)
            clock.now = datetime(2030, 6, 1, 3, 50, tzinfo=UTC).timestamp()
            attempts = await scheduler.run_pass("test:g1")
            assert [a.report.outcome for a in attempts] == ["compressed"]
        finally:
            await scheduler.stop()


class _FailingSummarizer:
    async def summarize(self, request: SummaryRequest) -> str:
        raise SummaryAuthError("invalid api key")


async def test_scheduler_started_inside_the_window_runs_the_missed_pass_at_once(
    tmp_path: Path,
) -> None:
    clock = FakeClock(time.time() - 2 * 3600)
    async with App(quiet_config(tmp_path), clock=clock) as app:
        services = app.services
        await fill_session(services, "test:g1", messages=BIG)
        window = window_around(datetime.now(UTC), starts_in=-timedelta(minutes=30))
        await services.store.set_chat_setting("test:g1", "overnight_window", str(window))
        # An aborted compaction is the one outcome that is posted, so the test can wait for it.
        services.compactor = SessionCompactor(
            services.store, services.counter, lambda _usage: _FailingSummarizer(), clock=clock
        )
        clock.now = time.time()
        posted: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

        async def notify(chat_key: str, text: str) -> None:
            posted.put_nowait((chat_key, text))

        scheduler = OvernightScheduler(services, app.gateway, notify=notify, jitter=lambda: 0.0)
        await scheduler.start()
        try:
            chat_key, _ = await asyncio.wait_for(posted.get(), 5)
            assert chat_key == "test:g1"
        finally:
            await scheduler.stop()
        events = await services.store.list_compression_events()
        assert [(e.trigger, e.outcome) for e in events] == [("overnight", "aborted")]


async def test_stop_is_safe_twice_and_unregisters_the_settings_listener(tmp_path: Path) -> None:
    async with App(quiet_config(tmp_path)) as app:
        scheduler = OvernightScheduler(app.services, app.gateway)
        await scheduler.start()
        await scheduler.start()
        assert app.gateway.settings_listeners == [scheduler.reschedule]

        await scheduler.stop()
        await scheduler.stop()

        assert app.gateway.settings_listeners == []
        assert scheduler.next_run("test:g1") is None


async def test_stop_cancels_a_running_pass_and_releases_the_session_lock(tmp_path: Path) -> None:
    clock = FakeClock(time.time() - 2 * 3600)
    async with App(quiet_config(tmp_path), clock=clock) as app:
        services = app.services
        session_id = await fill_session(services, "test:g1", messages=BIG)
        window = window_around(datetime.now(UTC), starts_in=-timedelta(minutes=30))
        await services.store.set_chat_setting("test:g1", "overnight_window", str(window))
        summarizer = GatedSummarizer()
        services.compactor = SessionCompactor(
            services.store, services.counter, lambda _usage: summarizer, clock=clock
        )
        clock.now = time.time()
        scheduler = OvernightScheduler(services, app.gateway, jitter=lambda: 0.0)
        await scheduler.start()
        await asyncio.wait_for(summarizer.started.wait(), 5)

        await asyncio.wait_for(scheduler.stop(), 5)

        assert await services.store.lock_holder(session_id) is None
        assert (await services.store.get_session(session_id)).active_messages == BIG

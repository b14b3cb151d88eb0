"""A chat's retention period: the scheduler forgets rows older than it (SPEC 16)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from compactbot.bot.app import App
from compactbot.bot.settings import chat_settings
from compactbot.bot.settings.chat_settings import SettingOutOfBounds
from compactbot.bot.settings.config import Bounds
from compactbot.scheduler.overnight import SECONDS_PER_DAY, OvernightScheduler
from tests.harness import make_config
from tests.scheduler.builders import FakeClock, fill_session

CHAT = "test:g1"
LONG_AGO = datetime(2026, 5, 1, 3, 0, tzinfo=UTC)


async def test_the_sweep_forgets_rows_older_than_the_retention_period(tmp_path: Path) -> None:
    clock = FakeClock.at(LONG_AGO)
    async with App(make_config(tmp_path), clock=clock) as app:
        services = app.services
        await fill_session(services, CHAT, messages=3, words=3, author="Old")
        clock.advance(20 * SECONDS_PER_DAY)
        await fill_session(services, CHAT, messages=2, words=3, author="New")
        await services.store.set_chat_setting(CHAT, "retention_days", "7")
        scheduler = OvernightScheduler(services, app.gateway, jitter=lambda: 0.0)

        await scheduler.sweep_retention()

        texts = [m.text for m in await services.store.load_history(CHAT)]
        assert len(texts) == 2 and all(t.startswith("[New]") for t in texts), texts


async def test_retention_holds_in_a_chat_without_an_overnight_window(tmp_path: Path) -> None:
    clock = FakeClock.at(LONG_AGO)
    async with App(make_config(tmp_path), clock=clock) as app:
        services = app.services
        await fill_session(services, CHAT, messages=3, words=3, author="Old")
        clock.advance(20 * SECONDS_PER_DAY)
        await services.store.set_chat_setting(CHAT, "overnight", "off")
        await services.store.set_chat_setting(CHAT, "retention_days", "7")
        scheduler = OvernightScheduler(services, app.gateway, jitter=lambda: 0.0)

        await scheduler.start()  # the sweep runs when the schedule starts, then hourly
        try:
            assert scheduler.next_run(CHAT) is None  # no overnight job for this chat
            assert await services.store.load_history(CHAT) == []
        finally:
            await scheduler.stop()


def test_a_chat_admin_sets_retention_only_within_the_operators_bounds(tmp_path: Path) -> None:
    bounds = Bounds(retention_days=(30, 365))
    config = make_config(tmp_path).model_copy(update={"bounds": bounds})
    assert chat_settings.parse_setting("retention_days", "90", config, enforce_bounds=True) == "90"
    with pytest.raises(SettingOutOfBounds):
        chat_settings.parse_setting("retention_days", "7", config, enforce_bounds=True)
    assert chat_settings.parse_setting("retention_days", "7", config, enforce_bounds=False) == "7"

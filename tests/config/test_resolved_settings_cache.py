"""The resolved settings are reused per chat only while the values they came from are unchanged."""

from __future__ import annotations

from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.llm.offline_model import OfflineModel
from tests.harness import make_config

CHAT = "test:1"
THREAD = "test:1:7"


async def test_resolved_settings_are_reused_until_a_value_changes(tmp_path: Path) -> None:
    async with App(make_config(tmp_path), llm=OfflineModel()) as app:
        services, store = app.services, app.services.store
        first = await services.settings_for(CHAT, None)
        assert await services.settings_for(CHAT, None) is first
        await store.set_chat_setting(CHAT, "protect_last_n", "3")
        changed = await services.settings_for(CHAT, None)
        assert changed.protect_last_n == 3
        await store.unset_chat_setting(CHAT, "protect_last_n")
        assert (await services.settings_for(CHAT, None)).protect_last_n == first.protect_last_n


async def test_a_parent_change_reaches_its_thread_at_once(tmp_path: Path) -> None:
    async with App(make_config(tmp_path), llm=OfflineModel()) as app:
        services, store = app.services, app.services.store
        before = await services.settings_for(THREAD, CHAT)
        await store.set_chat_setting(CHAT, "language", "de")
        after = await services.settings_for(THREAD, CHAT)
        assert before.language != "de"
        assert after.language == "de"

"""Hostile senders: members reaching for admin commands, and chats not on the allow-list."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import RecordingAdapter, group_message, make_config, running_app
from tests.reliability.hostile_rig import CHAT, texts_stored
from tests.reliability.rig import EchoLLM, yaml_config

ADMIN_ATTEMPTS = ("/compress", "/new", "/config threshold 0.5", "/pin x", "/unpin 1")
ALLOWED = "test:allowed"


async def test_member_using_admin_commands_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    async with running_app(make_config(tmp_path), llm=EchoLLM()) as app:
        store = app.services.store
        adapter = RecordingAdapter(admins={"alice"})
        await app.gateway.handle(group_message("hello all", author="Alice"), adapter)
        await app.gateway.join()
        session_before = (await store.active_session(CHAT)).id
        sent_before = len(adapter.sent)
        for command in ADMIN_ATTEMPTS:
            await app.gateway.handle(group_message(command, author="Eve"), adapter)
        await app.gateway.join()

        refusals = adapter.texts()[sent_before:]
        assert len(refusals) == len(ADMIN_ATTEMPTS)
        assert all(r.startswith("⛔") and "\n" not in r for r in refusals)
        assert (await store.active_session(CHAT)).id == session_before
        assert await store.list_pins(CHAT) == []
        assert await store.get_chat_settings(CHAT) == {}
        assert await store.list_compression_events(chat_key=CHAT) == []


@pytest.mark.parametrize("first_addressed", [True, False])
async def test_chat_off_the_allow_list_is_told_once_and_nothing_is_stored(
    tmp_path: Path, first_addressed: bool
) -> None:
    config = yaml_config(tmp_path, {"gateway": {"allowed_chats": [ALLOWED]}})
    async with running_app(config, llm=EchoLLM()) as app:
        adapter = RecordingAdapter()
        await app.gateway.handle(
            group_message("hi", chat_id="other", addressed=first_addressed), adapter
        )
        for i in range(3):
            await app.gateway.handle(group_message(f"@bot q{i}", chat_id="other"), adapter)
        await app.gateway.handle(group_message("/help", chat_id="other"), adapter)
        await app.gateway.handle(group_message("@bot hello", chat_id="allowed"), adapter)
        await app.gateway.join()

        other = adapter.texts("other")
        assert len(other) == 1 and "not enabled" in other[0]
        assert await texts_stored(app, "test:other") == []
        assert await app.services.store.get_chat("test:other") is None
        assert len(adapter.texts("allowed")) == 1

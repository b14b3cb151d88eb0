"""Slash commands end to end: INTERACTION_CREATE in, deferred, answered through the followup."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.discord_rig import WAIT_SECONDS, Rig, SlashFakeDiscord, discord_rig
from tests.fakes.discord_payloads import EVERYONE_PERMISSIONS, MANAGE_MESSAGES
from tests.fakes.discord_wire import SentDiscordMessage

DEFERRED_CHANNEL_MESSAGE = 5  # interaction callback type: "thinking…", answered later
EPHEMERAL_FLAG = 64  # message flag: visible only to the member who ran the command


@pytest.fixture
async def slash_fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[SlashFakeDiscord]:
    fake = SlashFakeDiscord()
    async with fake:
        fake.install(monkeypatch)
        yield fake


@pytest.fixture
async def rig(tmp_path: Path, slash_fake: SlashFakeDiscord) -> AsyncIterator[Rig]:
    async with discord_rig(tmp_path, slash_fake) as running:
        yield running


async def next_followup(fake: SlashFakeDiscord) -> SentDiscordMessage:
    return await asyncio.wait_for(fake.followups.get(), WAIT_SECONDS)


async def test_slash_command_is_deferred_and_answered_through_the_followup(
    rig: Rig, slash_fake: SlashFakeDiscord
) -> None:
    await slash_fake.slash("help")
    followup = await next_followup(slash_fake)
    assert "/compress" in followup.content
    assert followup.allowed_mentions == {"parse": []}
    (callback,) = slash_fake.interaction_callbacks
    assert callback.body["type"] == DEFERRED_CHANNEL_MESSAGE
    assert not slash_fake.calls_to("/messages")  # nothing went to the channel directly


async def test_slash_compress_without_manage_messages_is_refused(
    rig: Rig, slash_fake: SlashFakeDiscord
) -> None:
    await slash_fake.slash("compress", permissions=EVERYONE_PERMISSIONS)
    followup = await next_followup(slash_fake)
    assert followup.content.startswith("⛔ /compress needs chat-admin rights")


async def test_slash_pin_by_a_moderator_pins_the_text_in_that_chat(
    rig: Rig, slash_fake: SlashFakeDiscord
) -> None:
    await slash_fake.slash(
        "pin",
        {"text": "deploys are on Fridays"},
        permissions=EVERYONE_PERMISSIONS | MANAGE_MESSAGES,
    )
    followup = await next_followup(slash_fake)
    assert followup.content == "📌 Pinned #1: deploys are on Fridays"
    pins = await rig.app.services.store.list_pins(f"discord:{slash_fake.channel_id}")
    assert [pin.text for pin in pins] == ["deploys are on Fridays"]


async def test_slash_command_in_a_thread_acts_on_the_thread_chat(
    rig: Rig, slash_fake: SlashFakeDiscord
) -> None:
    await slash_fake.slash(
        "pin",
        {"text": "thread-only fact"},
        permissions=EVERYONE_PERMISSIONS | MANAGE_MESSAGES,
        channel_id=slash_fake.thread_id,
    )
    handled = await rig.next_handled()
    assert handled.chat_key == f"discord:{slash_fake.channel_id}:{slash_fake.thread_id}"
    await next_followup(slash_fake)
    store = rig.app.services.store
    assert [p.text for p in await store.list_pins(handled.chat_key)] == ["thread-only fact"]
    assert await store.list_pins(f"discord:{slash_fake.channel_id}") == []


async def test_slash_summary_is_answered_only_to_the_asker(
    rig: Rig, slash_fake: SlashFakeDiscord
) -> None:
    await slash_fake.send_message(
        "Decision: we will ship on Thursday", author_id=1002, author_name="bob"
    )
    await rig.next_handled()  # stored before the command arrives
    await rig.settle()
    await slash_fake.slash("summary", {"focus": "2h"})
    followup = await next_followup(slash_fake)
    assert followup.content.startswith("🧾 What you missed in the last 2h")
    (callback,) = slash_fake.interaction_callbacks
    assert callback.body["type"] == DEFERRED_CHANNEL_MESSAGE
    assert callback.body["data"]["flags"] & EPHEMERAL_FLAG  # only the asker sees the digest
    assert followup.body["flags"] & EPHEMERAL_FLAG
    assert not slash_fake.calls_to("/messages")  # nothing in the channel

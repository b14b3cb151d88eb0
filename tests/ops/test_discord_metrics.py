"""Discord's flood-control waits reach the metrics although discord.py handles them itself."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.discord_rig import Rig, discord_rig
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.fixtures import fake_discord  # noqa: F401  (pytest fixture)
from tests.fakes.openai_server import Reply

RETRY_AFTER_SECONDS = 0.05


@pytest.fixture
async def rig(tmp_path: Path, fake_discord: FakeDiscord) -> AsyncIterator[Rig]:  # noqa: F811
    async with discord_rig(tmp_path, fake_discord) as running:
        yield running


async def test_discord_rate_limit_wait_is_counted_with_its_seconds(rig: Rig) -> None:
    registry = rig.app.metrics.registry
    rig.llm.script(Reply("worth the wait"))
    rig.discord.rate_limit_next("/messages", retry_after=RETRY_AFTER_SECONDS)
    await rig.discord.send_message("hi", mention_bot=True)
    assert (await rig.next_sent()).content == "worth the wait"
    labels = {"platform": "discord"}
    assert registry.get_sample_value("compactbot_retry_after_waits_total", labels) == 1
    waited = registry.get_sample_value("compactbot_retry_after_wait_seconds_total", labels)
    assert waited == RETRY_AFTER_SECONDS
    await rig.settle()
    answered = registry.get_sample_value("compactbot_messages_answered_total", labels)
    assert answered == 1

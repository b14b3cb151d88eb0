"""Our getUpdates loop against the fake Bot API: nothing is confirmed before it is kept."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from telegram import Bot, Update

from compactbot.adapters.telegram_ingest import UpdateIngest
from compactbot.adapters.telegram_polling import UpdatePoller
from compactbot.bot.store.base import DeadLetter
from tests.fakes.fixtures import fake_telegram  # noqa: F401  (pytest fixture)
from tests.fakes.telegram_server import FakeTelegram

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

WAIT_SECONDS = 10.0


class BrokenDeadLetters:
    """A store that is down: every write fails."""

    async def record_dead_letter(
        self, platform: str, update_id: str, error: str, payload: str
    ) -> bool:
        raise OSError("disk I/O error")

    async def list_dead_letters(self, limit: int = 50) -> list[DeadLetter]:
        return []


@pytest.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:  # noqa: F811
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url) as connected:
        yield connected


def offsets(fake: FakeTelegram) -> list[int]:
    return [int(c.params.get("offset") or 0) for c in fake.calls_to("getUpdates")]


async def test_update_neither_stored_nor_dead_lettered_is_not_confirmed_and_comes_back(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    handled: list[int] = []
    kept = asyncio.Event()
    failures = 4  # the first delivery (two tries) and the second (two tries) fail

    async def handle(update: Update) -> None:
        nonlocal failures
        if failures:
            failures -= 1
            raise OSError("database is locked")
        handled.append(update.update_id)
        kept.set()

    ingest = UpdateIngest(bot, handle, BrokenDeadLetters(), retry_delays_seconds=(0.0,))
    poller = UpdatePoller(bot, ingest, allowed_updates=["message"], long_poll_seconds=1)
    update = fake_telegram.group_message("keep me")
    fake_telegram.push_update(update)
    poller.start()
    try:
        await asyncio.wait_for(kept.wait(), WAIT_SECONDS)
    finally:
        await poller.stop()

    assert handled == [update["update_id"]]
    seen = offsets(fake_telegram)
    # Fetched three times before it was kept, and no request confirmed it before then.
    first_past = next(i for i, offset in enumerate(seen) if offset > update["update_id"])
    assert first_past >= 3
    assert fake_telegram.unconfirmed == 0


async def test_stop_lets_the_update_being_stored_finish_then_confirms_it(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    storing = asyncio.Event()
    release = asyncio.Event()
    handled: list[int] = []

    async def handle(update: Update) -> None:
        storing.set()
        await release.wait()
        handled.append(update.update_id)

    ingest = UpdateIngest(bot, handle, BrokenDeadLetters())
    poller = UpdatePoller(bot, ingest, allowed_updates=["message"], long_poll_seconds=1)
    update = fake_telegram.group_message("in flight at shutdown")
    fake_telegram.push_update(update)
    poller.start()
    await asyncio.wait_for(storing.wait(), WAIT_SECONDS)
    stopping = asyncio.create_task(poller.stop())
    await asyncio.sleep(0)
    assert not stopping.done()  # stop waits for the update in hand
    release.set()
    await asyncio.wait_for(stopping, WAIT_SECONDS)

    assert handled == [update["update_id"]]
    assert offsets(fake_telegram)[-1] == update["update_id"] + 1  # the final confirmation
    assert fake_telegram.unconfirmed == 0

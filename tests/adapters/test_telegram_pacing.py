"""Two workers sending for one bot keep Telegram's limits together: real PTB with our limiter
against FakeTelegram, the slots in PostgreSQL, the waits recorded instead of slept."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from telegram.ext import ExtBot

from compactbot.adapters.telegram_delivery import TelegramSender, WireMarkingLimiter
from compactbot.adapters.telegram_pacing import (
    BOT_BURST,
    BOT_INTERVAL_SECONDS,
    GROUP_BURST,
    GROUP_INTERVAL_SECONDS,
    SharedPacing,
)
from compactbot.bot.events import ReplyTarget
from compactbot.bot.store import PostgresStore
from tests import postgres_server
from tests.fakes.fixtures import fake_telegram  # noqa: F401  (pytest fixture)
from tests.fakes.telegram_server import FakeTelegram
from tests.store.conftest import ManualClock

GROUP = ReplyTarget("telegram", "-1001")
OTHER_GROUP = ReplyTarget("telegram", "-1002")
PRIVATE = ReplyTarget("telegram", "42")


class RecordedSleeps(list[float]):
    """Sleeps that pass the stores' clock on instead of waiting (sends take no time)."""

    def __init__(self, clock: ManualClock) -> None:
        super().__init__()
        self._clock = clock

    async def __call__(self, seconds: float) -> None:
        self.append(seconds)
        self._clock.advance(seconds)


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def stores(clock: ManualClock) -> AsyncIterator[tuple[PostgresStore, PostgresStore]]:
    server = postgres_server.require_server()
    async with (
        postgres_server.fresh_schema(server) as dsn,
        PostgresStore(dsn, clock=clock) as one,
        PostgresStore(dsn, clock=clock) as two,
    ):
        yield one, two


def _worker_bot(fake: FakeTelegram, store: PostgresStore, sleeps: RecordedSleeps) -> ExtBot:
    shared = SharedPacing(store.pacing(), sleep=sleeps)
    return ExtBot(
        fake.token,
        base_url=fake.base_url,
        base_file_url=fake.base_file_url,
        rate_limiter=WireMarkingLimiter(shared=shared, max_retries=0),
    )


async def test_two_workers_keep_a_groups_twenty_a_minute_together(
    fake_telegram: FakeTelegram,  # noqa: F811
    stores: tuple[PostgresStore, PostgresStore],
    clock: ManualClock,
) -> None:
    sleeps_one, sleeps_two = RecordedSleeps(clock), RecordedSleeps(clock)
    async with (
        _worker_bot(fake_telegram, stores[0], sleeps_one) as one,
        _worker_bot(fake_telegram, stores[1], sleeps_two) as two,
    ):
        senders = [TelegramSender(one), TelegramSender(two)]
        for n in range(GROUP_BURST):  # the burst, shared by both workers, goes at once
            await senders[n % 2].send(GROUP, f"burst {n}")
        assert sleeps_one == sleeps_two == []
        await senders[0].send(OTHER_GROUP, "elsewhere")  # another group has its own bucket
        assert sleeps_one == []
        await senders[1].send(GROUP, "one more")
        assert sleeps_two == [pytest.approx(GROUP_INTERVAL_SECONDS, abs=1e-5)]  # then one every 3 s
    assert len(fake_telegram.sent_log) == GROUP_BURST + 2
    assert fake_telegram.sent_log[-1].text == "one more"


async def test_the_bots_thirty_a_second_hold_for_every_chat(
    fake_telegram: FakeTelegram,  # noqa: F811
    stores: tuple[PostgresStore, PostgresStore],
    clock: ManualClock,
) -> None:
    sleeps = RecordedSleeps(clock), RecordedSleeps(clock)
    async with (
        _worker_bot(fake_telegram, stores[0], sleeps[0]) as one,
        _worker_bot(fake_telegram, stores[1], sleeps[1]) as two,
    ):
        senders = [TelegramSender(one), TelegramSender(two)]
        for n in range(BOT_BURST):  # private chats: only the bot's own limit applies
            await senders[n % 2].send(ReplyTarget("telegram", str(100 + n)), f"dm {n}")
        assert sleeps == ([], [])
        await senders[0].send(PRIVATE, "the 31st")
        assert sleeps[0] == [pytest.approx(BOT_INTERVAL_SECONDS, abs=1e-5)]


async def test_requests_that_send_nothing_are_not_paced(
    fake_telegram: FakeTelegram,  # noqa: F811
    stores: tuple[PostgresStore, PostgresStore],
    clock: ManualClock,
) -> None:
    sleeps = RecordedSleeps(clock)
    async with _worker_bot(fake_telegram, stores[0], sleeps) as bot:
        for _ in range(3):
            await bot.send_chat_action(chat_id=-1001, action="typing")
    assert sleeps == []

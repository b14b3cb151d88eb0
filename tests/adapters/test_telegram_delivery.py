"""TelegramSender's retry policy against FakeTelegram, with the waits recorded instead of slept."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from telegram import Bot
from telegram.ext import ExtBot

from compactbot.adapters.telegram_delivery import (
    NETWORK_BACKOFF_SECONDS,
    TelegramSender,
    WireMarkingLimiter,
)
from compactbot.bot.events import DeliveryError, ReplyTarget
from compactbot.bot.workers.wire import WIRE
from tests.fakes.fixtures import fake_telegram  # noqa: F401  (pytest fixture)
from tests.fakes.telegram_server import FakeTelegram

# PTB itself warns when it builds a RetryAfter (the int → timedelta change in PTB 23).
pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

TOPIC = ReplyTarget("telegram", "-1001", thread_id="42", reply_to_message_id="7")


class RecordedSleeps(list[float]):
    async def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:  # noqa: F811
    async with Bot(
        fake_telegram.token,
        base_url=fake_telegram.base_url,
        base_file_url=fake_telegram.base_file_url,
    ) as client:
        yield client


async def test_every_chunk_keeps_the_thread_and_only_the_first_replies(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    await TelegramSender(bot).send(TOPIC, "\n\n".join(["para " * 200] * 12))
    sent = fake_telegram.sent_log
    assert len(sent) > 1
    assert all(message.thread_id == 42 for message in sent)
    assert sent[0].params["reply_parameters"] == {
        "message_id": 7,
        "allow_sending_without_reply": True,
    }
    assert all("reply_parameters" not in message.params for message in sent[1:])
    assert all(message.params["link_preview_options"] == {"is_disabled": True} for message in sent)


async def test_network_errors_back_off_then_deliver(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    sleeps = RecordedSleeps()
    fake_telegram.fail_next("sendMessage", 502, "Bad Gateway")
    fake_telegram.fail_next("sendMessage", 502, "Bad Gateway")
    await TelegramSender(bot, sleep=sleeps).send(TOPIC, "hello")
    assert sleeps == [0.5, 1.0]
    assert [m.text for m in fake_telegram.sent_log] == ["hello"]


async def test_persistent_network_errors_raise_delivery_error(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    sleeps = RecordedSleeps()
    for _ in range(len(NETWORK_BACKOFF_SECONDS) + 1):
        fake_telegram.fail_next("sendMessage", 502, "Bad Gateway")
    with pytest.raises(DeliveryError):
        await TelegramSender(bot, sleep=sleeps).send(TOPIC, "hello")
    assert sleeps == list(NETWORK_BACKOFF_SECONDS)


async def test_retry_after_is_obeyed_three_times_then_gives_up(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    sleeps = RecordedSleeps()
    for _ in range(4):
        fake_telegram.fail_next("sendMessage", 429, "Too Many Requests", retry_after=7)
    with pytest.raises(DeliveryError):
        await TelegramSender(bot, sleep=sleeps).send(TOPIC, "hello")
    assert sleeps == [7.0, 7.0, 7.0]


async def test_hours_long_flood_wait_fails_fast(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    sleeps = RecordedSleeps()
    fake_telegram.fail_next("sendMessage", 429, "Too Many Requests", retry_after=13_938)
    with pytest.raises(DeliveryError):
        await TelegramSender(bot, sleep=sleeps).send(TOPIC, "hello")
    assert sleeps == []


async def test_bot_removed_from_chat_raises_delivery_error_at_once(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.fail_next("sendMessage", 403, "Forbidden: bot was kicked from the group chat")
    with pytest.raises(DeliveryError):
        await TelegramSender(bot, sleep=RecordedSleeps()).send(TOPIC, "hello")
    assert len(fake_telegram.calls_to("sendMessage")) == 1


async def test_migrated_chat_is_sent_to_the_new_id(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.fail_next(
        "sendMessage", 400, "Bad Request: group chat was upgraded", migrate_to_chat_id=-1002
    )
    await TelegramSender(bot).send(ReplyTarget("telegram", "-5"), "hello")
    assert [m.chat_id for m in fake_telegram.sent_log] == [-1002]


async def test_failed_typing_action_does_not_disturb_the_turn(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.fail_next("sendChatAction", 403, "Forbidden: bot was kicked")
    async with TelegramSender(bot).typing(TOPIC):
        pass
    assert len(fake_telegram.calls_to("sendChatAction")) == 1


class RecordedWire(list[str]):
    async def leaving(self) -> None:
        self.append("leaving")

    async def arrived(self) -> None:
        self.append("arrived")

    async def refused(self) -> None:
        self.append("refused")


async def test_the_outbox_hears_a_flood_wait_as_a_refusal_and_the_retry_as_arrived(
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.fail_next("sendMessage", 429, "Too Many Requests", retry_after=7)
    wire = RecordedWire()
    async with ExtBot(
        fake_telegram.token,
        base_url=fake_telegram.base_url,
        base_file_url=fake_telegram.base_file_url,
        rate_limiter=WireMarkingLimiter(max_retries=0),
    ) as client:
        token = WIRE.set(wire)  # as the outbox sets it around one reply, after start-up
        try:
            await TelegramSender(client, sleep=RecordedSleeps()).send(TOPIC, "hello")
        finally:
            WIRE.reset(token)
    assert wire == ["leaving", "refused", "leaving", "arrived"]
    assert [m.text for m in fake_telegram.sent_log] == ["hello"]

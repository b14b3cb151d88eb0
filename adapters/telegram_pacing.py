"""Telegram's limits kept by every worker together (SPEC 15): about 30 messages a second for
the bot and 20 a minute in a group, each with the burst PTB's own limiter allows.

PTB's limiter keeps them within one process; with several workers sending for the same bot,
each request of a sending method first takes a slot of its group and of the bot from the shared
store and waits for it, so the fleet stays within them instead of meeting flood waits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol

SENDING_METHODS = frozenset(
    {
        *("sendMessage", "sendPhoto", "sendDocument", "sendVideo", "sendAudio", "sendVoice"),
        *("sendAnimation", "sendSticker", "sendMediaGroup", "copyMessage", "forwardMessage"),
    }
)
# PTB's AIORateLimiter defaults: 30 in any second for the bot, 20 in any minute in a group.
BOT_BURST, BOT_INTERVAL_SECONDS = 30, 1 / 30
GROUP_BURST, GROUP_INTERVAL_SECONDS = 20, 60 / 20
BOT_SLOT = "telegram"

Sleep = Callable[[float], Awaitable[None]]


class SendSlots(Protocol):
    """The shared store's slots (`bot.store.postgres.pacing.PostgresPacing`)."""

    def now(self) -> float: ...
    async def slot(self, name: str, interval: float, not_before: float, burst: int) -> float: ...


class SharedPacing:
    """Waits, before a sending request leaves, for this worker's slot of its group and bot."""

    def __init__(self, slots: SendSlots, *, sleep: Sleep = asyncio.sleep) -> None:
        self._slots = slots
        self._sleep = sleep

    async def wait(self, method: str, data: Mapping[str, Any]) -> None:
        if method not in SENDING_METHODS:
            return
        chat = data.get("chat_id")
        if chat is not None and str(chat).startswith("-"):  # groups and channels: negative ids
            await self._until(f"{BOT_SLOT}:{chat}", GROUP_INTERVAL_SECONDS, GROUP_BURST)
        # The bot's slot only once the group's has come: a busy group holds up no other chat.
        await self._until(BOT_SLOT, BOT_INTERVAL_SECONDS, BOT_BURST)

    async def _until(self, name: str, interval: float, burst: int) -> None:
        now = self._slots.now()
        start = await self._slots.slot(name, interval, now, burst)
        if start > now:
            await self._sleep(start - now)

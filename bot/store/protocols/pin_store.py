"""The storage protocol of pins: durable per-chat facts that survive every compaction (SPEC 6.8)."""

from __future__ import annotations

from typing import Protocol

from compactbot.bot.store.base import Pin


class PinStore(Protocol):
    """A chat's pins, oldest first."""

    async def add_pin(self, chat_key: str, text: str, author: str | None) -> Pin: ...
    async def list_pins(self, chat_key: str) -> list[Pin]: ...
    async def remove_pin(self, chat_key: str, pin_id: int) -> bool: ...

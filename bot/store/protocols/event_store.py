"""The storage protocol of compression events: one row per compaction attempt, for operators."""

from __future__ import annotations

from typing import Protocol

from compactbot.bot.store.base import CompressionEvent


class CompressionEventStore(Protocol):
    """What each compaction attempt did (trigger, outcome, sizes), newest first when listed."""

    async def record_compression_event(self, event: CompressionEvent) -> int: ...
    async def list_compression_events(
        self, *, chat_key: str | None = None, limit: int = 50
    ) -> list[CompressionEvent]: ...

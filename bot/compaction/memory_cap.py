"""Whether a chat's must-show memory outgrows the summary's cap (SPEC 6.11).

/status and the operator console both say so; this is the one place that decides it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.compression import Memory
from compactbot.compression.memory_render import must_show_tokens


@dataclass(frozen=True, slots=True)
class MemoryOverCap:
    """The tokens the pins and must-show entries need, and the cap they outgrew."""

    need: int
    cap: int


async def memory_over_cap(
    services: Services, settings: ChatSettings, memory: Memory, chat_key: str
) -> MemoryOverCap | None:
    """The overflow when the chat's pins and the memory's rules, preferences and open actions
    need more than the summary's cap (`compression.memory_cap_ratio`), else None."""
    pins = [pin.text for pin in await services.pins.list_pins(chat_key)]
    # Tokenizing a large memory is CPU work: off the event loop (SPEC 17).
    need = await asyncio.to_thread(
        must_show_tokens, memory, count_tokens=services.counter.count_text, pins=pins
    )
    cap = services.compaction_settings(settings).memory_cap_tokens
    return MemoryOverCap(need, cap) if need > cap else None

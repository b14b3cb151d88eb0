"""Whether a chat's must-show memory outgrows the summary's cap (SPEC 6.11).

/status and the operator console both say so; this is the one place that decides it.
"""

from __future__ import annotations

from dataclasses import dataclass

from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.base import SessionRecord
from compactbot.compression.memory_render import pins_tokens


@dataclass(frozen=True, slots=True)
class MemoryOverCap:
    """The tokens the pins and must-show entries need, and the cap they outgrew."""

    need: int
    cap: int


async def memory_over_cap(
    services: Services, settings: ChatSettings, session: SessionRecord
) -> MemoryOverCap | None:
    """The overflow when the chat's pins and the memory's rules, preferences and open actions
    need more than the summary's cap (`compression.memory_cap_ratio`), else None.

    The memory's part is the one its last compaction measured (the memory changes only then),
    so a page of many chats reads no memory; the pins, which change any time, are counted now.
    """
    pins = [pin.text for pin in await services.pins.list_pins(session.chat_key)]
    memory_need = session.compressor.memory_need_tokens
    need = memory_need + pins_tokens(pins, count_tokens=services.counter.count_text)
    cap = services.compaction_settings(settings).memory_cap_tokens
    return MemoryOverCap(need, cap) if need > cap else None

"""The request one question becomes for the agent runner, the same from either gateway."""

from __future__ import annotations

from compactbot.bot.events import InboundMessage
from compactbot.bot.llm.stream import TextSink
from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.base import TurnFence
from compactbot.bot.turns.runner import TurnRequest


def turn_request(
    services: Services,
    message: InboundMessage,
    session_id: int,
    anchor_id: int,
    settings: ChatSettings,
    *,
    can_remember: bool,
    on_text: TextSink | None = None,
    fence: TurnFence | None = None,
) -> TurnRequest:
    """`message` (stored as `anchor_id`) answered in `session_id` under the chat's settings."""
    compression = services.config.compression
    return TurnRequest(
        session_id=session_id,
        chat_key=message.chat_key,
        anchor_id=anchor_id,
        author_id=message.author_id,
        author_name=message.author_name,
        can_remember=can_remember,
        settings=services.compaction_settings(settings),
        compression_enabled=compression.enabled,
        compaction_wait_seconds=compression.hygiene_max_wait_seconds,
        anchor_platform_id=message.platform_message_id,
        on_text=on_text,
        model=services.model_for(settings),
        fence=fence,
    )

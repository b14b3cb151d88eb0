"""Whether the author of a message may act as the chat's admin (remember, change settings)."""

from __future__ import annotations

import logging
from collections.abc import Collection

from compactbot.bot.events import Adapter, InboundMessage

log = logging.getLogger(__name__)


async def is_admin(message: InboundMessage, adapter: Adapter, operators: Collection[str]) -> bool:
    """Operators and private chats always; otherwise as the update or the platform says."""
    if f"{message.platform}:{message.author_id}" in operators:
        return True
    if not message.is_group:
        return True
    if message.is_admin is not None:
        return message.is_admin
    try:
        return await adapter.is_admin(message)
    except Exception:
        log.exception("admin check failed; treating as not admin (chat=%s)", message.chat_key)
        return False

"""Members' edits and deletes of messages the bot already stored (SPEC 11).

An edit rewrites the stored message the same way the gateway first wrote it (attribution, reply
quote); the old text stays in the store's revisions. A delete takes the message out of search,
tool results and every later summary input. Redelivered updates change nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from compactbot.bot.events import InboundMessage
from compactbot.bot.ingress.inbound_text import neutralised, reply_quote, transcript_text
from compactbot.bot.services import Services
from compactbot.compression.message_hints import message_hints

log = logging.getLogger(__name__)

EDIT_DEDUP_PLATFORM_SUFFIX = "-edit"


async def apply_edit(services: Services, message: InboundMessage) -> bool:
    """Store the new text of an edited message; False when the bot never stored it."""
    # An edit passes the same guard as a new message: no forged summary framing (SPEC 16).
    message = neutralised(message)
    if message.platform_message_id is None or not await _first_time(services, message):
        return False
    settings = await services.settings_for(message.chat_key)
    shared = message.is_group and settings.memory_scope == "shared"
    quote = await reply_quote(services.revisions, message)
    content = transcript_text(message, shared=shared, quote=quote)
    user = {"role": "user", "content": content}
    changed = await services.revisions.edit_platform_message(
        message.chat_key,
        message.platform_message_id,
        content,
        services.counter.count_message(user),
        message_hints(user),
    )
    log.info("message edit %s (chat=%s)", "stored" if changed else "unknown", message.chat_key)
    return changed


async def apply_delete(
    services: Services, chat_key: str, platform_message_ids: Sequence[str]
) -> int:
    """Forget deleted messages everywhere they left a trace (SPEC 16); how many rows went."""
    removed = await services.forgetting.forget_messages(chat_key, platform_message_ids)
    log.info("message delete forgot %d rows (chat=%s)", removed, chat_key)
    return removed


async def _first_time(services: Services, message: InboundMessage) -> bool:
    if message.update_id is None:
        return True
    return await services.dedup.mark_update_processed(
        message.platform + EDIT_DEDUP_PLATFORM_SUFFIX, message.update_id
    )

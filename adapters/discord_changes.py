"""Discord edits and deletes of members' messages, turned into store changes (SPEC 11)."""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

import discord

from compactbot.adapters.discord_gating import PLATFORM, ignore_reason, message_facts, to_inbound
from compactbot.bot.events import chat_key
from compactbot.bot.ingress.message_changes import apply_delete, apply_edit

if TYPE_CHECKING:
    from compactbot.bot.services import Services

log = logging.getLogger(__name__)


async def on_raw_edit(
    client: discord.Client, services: Services, payload: discord.RawMessageUpdateEvent
) -> None:
    """A member edited a message: the stored copy gets the new text."""
    if client.user is None or "content" not in payload.data:
        return  # embed unfurls arrive as edits too, without new content
    facts = message_facts(payload.message)
    bot_id = str(client.user.id)
    if ignore_reason(facts, bot_id) is not None:
        return
    inbound = to_inbound(facts, bot_id=bot_id)
    # MESSAGE_CREATE used the message id as its update id; each edit is a change of its own.
    edited_at = payload.data.get("edited_timestamp") or ""
    edit = dataclasses.replace(inbound, update_id=f"{facts.message_id}@{edited_at}")
    try:
        await apply_edit(services, edit)
    except Exception:
        log.exception("discord: edit handling failed (chat=%s)", inbound.chat_key)


async def on_raw_delete(
    client: discord.Client,
    services: Services,
    payload: discord.RawMessageDeleteEvent | discord.RawBulkMessageDeleteEvent,
) -> None:
    """Messages were deleted (one, or a moderator's bulk delete): they are forgotten (SPEC 16)."""
    channel = client.get_channel(payload.channel_id)
    if isinstance(channel, discord.Thread) and channel.parent_id is not None:
        key = chat_key(PLATFORM, str(channel.parent_id), str(payload.channel_id))
    else:
        key = chat_key(PLATFORM, str(payload.channel_id))
    if isinstance(payload, discord.RawBulkMessageDeleteEvent):
        ids = [str(message_id) for message_id in payload.message_ids]
    else:
        ids = [str(payload.message_id)]
    try:
        await apply_delete(services, key, ids)
    except Exception:
        log.exception("discord: delete handling failed (chat=%s)", key)

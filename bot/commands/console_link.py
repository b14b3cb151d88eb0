"""`/console`: a chat admin's one-time sign-in link to the web console, for this chat only.

The link signs in whoever opens it first, so it is only ever shown to the admin who asked: in a
private chat, as a Discord ephemeral reply, or in a Telegram private message; never in a group.
"""

from __future__ import annotations

import logging

from compactbot.bot.events import Adapter, DeliveryError, InboundMessage, ReplyTarget
from compactbot.bot.operators.console.links import issue_link
from compactbot.bot.services import Services
from compactbot.bot.store.protocols.console_records import AuditEntry

log = logging.getLogger(__name__)

# Platforms where a member's id is also their private chat with the bot (as for /summary).
DIRECT_MESSAGE_PLATFORMS = frozenset({"telegram"})
# The terminal room: whoever reads the screen is the operator running it.
LOCAL_PLATFORMS = frozenset({"console"})

NOT_ENABLED = "The web console is not enabled on this bot."
USE_SLASH = "Use the /console slash command: its answer is shown to you alone."
NO_PRIVATE_CHAT = (
    "I can't message you privately. Start a private chat with me, then send /console here again."
)


async def console_link(services: Services, message: InboundMessage, adapter: Adapter) -> list[str]:
    """The replies to `/console` in the chat (the link itself goes where only the asker sees)."""
    store, config = services.console_records, services.config
    if not config.console.enabled or store is None:
        return [NOT_ENABLED]
    private_here = (
        not message.is_group or message.private_reply or message.platform in LOCAL_PLATFORMS
    )
    if not private_here and message.platform not in DIRECT_MESSAGE_PLATFORMS:
        return [USE_SLASH]
    now = services.clock()
    who = f"{message.author_name} ({message.platform}:{message.author_id})"
    link = await issue_link(store, config, chat_key=message.chat_key, who=who, now=now)
    await store.record_audit(
        AuditEntry(now, who, "chat_admin", "sign-in link issued", "/console", message.chat_key)
    )
    minutes = f"{config.console.link_minutes:g}"
    text = f"🔑 Web console for this chat, valid for {minutes} minutes and for one sign-in: {link}"
    if private_here:
        return [text]
    try:
        await adapter.send(ReplyTarget(message.platform, message.author_id), text)
    except DeliveryError:
        log.info("console link not deliverable privately (chat=%s)", message.chat_key)
        return [NO_PRIVATE_CHAT]
    return [f"📬 {message.author_name}, I sent you a sign-in link privately."]

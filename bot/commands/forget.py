"""/forget (a member's own messages) and /purge (an admin's, by message or member): SPEC 16.

Forgetting everything a member wrote asks for a confirmation first; the offer is kept in the
store for CONFIRM_SECONDS, so the confirmation may reach any worker.
"""

from __future__ import annotations

from typing import Protocol

from compactbot.bot.events import InboundMessage
from compactbot.bot.services import Services

CONFIRM_SECONDS = 120.0
FORGET_USAGE = (
    "Reply to one of your messages with /forget to erase it, or send /forget all to erase "
    "everything you wrote in this chat."
)
PURGE_USAGE = "Reply to a message with /purge, or send /purge <member id>."


class _Host(Protocol):
    @property
    def services(self) -> Services: ...


class CommandContext(Protocol):
    """What these commands read of the router's context (which satisfies it)."""

    @property
    def message(self) -> InboundMessage: ...
    @property
    def host(self) -> _Host: ...


async def forget(args: str, ctx: CommandContext) -> list[str]:
    message = ctx.message
    services = ctx.host.services
    store, offers = services.forgetting, services.shared_limits
    now = services.clock()
    word = args.strip().lower()
    if message.reply_to is not None and not word:
        count = await store.forget_messages(
            message.chat_key, [message.reply_to], author_id=message.author_id
        )
        if not count:
            return ["Nothing to forget: that is not a message of yours that I stored."]
        return ["🧹 Forgotten: that message is gone from my history, search and memory."]
    # The offer is a notice window of the member's own: shared by every worker, and it expires.
    offer = f"forget-offer:{message.chat_key}:{message.author_id}"
    if word == "all":
        count = await store.count_member_messages(message.chat_key, message.author_id)
        if not count:
            return ["I have nothing stored that you wrote in this chat."]
        await offers.notice_reset(offer)
        await offers.notice_first(offer, "all", CONFIRM_SECONDS, now)
        return [
            f"This erases all {count} messages you wrote in this chat from my history, search "
            "and memory. Send /forget confirm within 2 minutes to go ahead."
        ]
    if word == "confirm":
        # No open window means no offer (the one this call opens is withdrawn at once).
        unoffered = await offers.notice_first(offer, "all", CONFIRM_SECONDS, now)
        await offers.notice_reset(offer)
        if unoffered:
            return ["Nothing to confirm. Send /forget all first."]
        count = await store.forget_member(message.chat_key, message.author_id)
        return [f"🧹 Forgotten: {count} stored messages of yours are gone from this chat."]
    return [FORGET_USAGE]


async def purge(args: str, ctx: CommandContext) -> list[str]:
    message = ctx.message
    store = ctx.host.services.forgetting
    member = args.strip()
    if message.reply_to is not None and not member:
        count = await store.forget_messages(message.chat_key, [message.reply_to])
    elif member and len(member.split()) == 1:
        count = await store.forget_member(message.chat_key, member)
    else:
        return [PURGE_USAGE]
    if not count:
        return ["Nothing to purge: I stored no such message here."]
    return [f"🧹 Purged {count} stored messages from this chat's history, search and memory."]

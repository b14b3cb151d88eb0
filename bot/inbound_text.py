"""What a member's message becomes in the transcript: attribution and the message it answers.

A reply brings the replied-to message into the turn as a short attributed quote. The quote is
looked up in the store first (archived rows included, so a message compacted away long ago is
still found) and taken from the platform's copy of it only when the store never saw it.
"""

from __future__ import annotations

import re

from bot.events import InboundMessage
from bot.store.base import Store

# A quote is context, not the conversation: long originals are cut to this.
QUOTE_MAX_CHARS = 400
BOT_NAME = "the bot"
_ATTRIBUTION_RE = re.compile(r"^\[([^\]\n]{1,100})\] ")


async def reply_quote(store: Store, message: InboundMessage) -> str | None:
    """`(in reply to Bob: "…")` for a reply, None for any other message."""
    if message.reply_to is None:
        return None
    found = await store.find_platform_message(message.chat_key, message.reply_to)
    if found is not None and found.text.strip():
        text = found.text
        who = found.author_name or (BOT_NAME if found.role == "assistant" else None)
        attributed = _ATTRIBUTION_RE.match(text)
        if attributed:
            who = who or attributed.group(1)
            text = text[attributed.end() :]
    elif message.reply_to_text:
        text, who = message.reply_to_text, message.reply_to_author
    else:
        return None
    return f'(in reply to {who or "an earlier message"}: "{_clip(text)}")'


def transcript_text(message: InboundMessage, *, shared: bool, quote: str | None) -> str:
    """`[Alice] (in reply to …) text` in a shared group session, else the text (and quote)."""
    body = f"{quote} {message.text}" if quote else message.text
    return f"[{message.author_name}] {body}" if shared else body


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= QUOTE_MAX_CHARS:
        return flat
    return flat[: QUOTE_MAX_CHARS - 1].rstrip() + "…"

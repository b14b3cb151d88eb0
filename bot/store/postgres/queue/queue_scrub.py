"""Forgetting in PostgreSQL's durable queues (SPEC 15, 16): a turn job keeps its message as the
member sent it and the outbox keeps what the bot said, so both lose a forgotten text too."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from compactbot.bot.store.forgetting import ForgetPlan, scrub_text
from compactbot.bot.store.reply_quotes import clipped, quote_body

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

# The tables a forget changes, vacuumed after it so no dead row version keeps the text.
FORGET_VACUUMED = (
    "messages",
    "message_revisions",
    "memory_entries",
    "memory_reread",
    "sessions",
    "turn_inbox",
    "reply_outbox",
)
# What a scrubbed reply that quoted nothing else says, should it still be sent.
EMPTIED_REPLY = "…"


async def scrub_queues(
    conn: PooledConnection, chat_key: str, row_ids: Sequence[int], changes: ForgetPlan
) -> None:
    """The chat's turn jobs without the forgotten messages' texts (theirs, or quoted as the
    message replied to) and its outbox without the lines that quote them."""
    quoted = {quote_body(text) for text in changes.texts}
    jobs = await conn.fetch(
        "SELECT id, payload FROM turn_inbox WHERE chat_key = $1 AND kind = 'turn'", chat_key
    )
    gone = {str(i) for i in row_ids}
    for job in jobs:
        payload = json.loads(job["payload"])
        message = payload.get("message") or {}
        changed = False
        if str(payload.get("message_id")) in gone:
            message["text"], changed = "", True
        replied = message.get("reply_to_text")
        if isinstance(replied, str) and clipped(replied) in quoted:
            message["reply_to_text"], changed = None, True
        if changed:
            await conn.execute(
                "UPDATE turn_inbox SET payload = $1 WHERE id = $2", json.dumps(payload), job["id"]
            )
    if not changes.needles:
        return
    says = await conn.fetch("SELECT id, text FROM reply_outbox WHERE chat_key = $1", chat_key)
    for say in says:
        text = scrub_text(say["text"], changes.needles)
        if text != say["text"]:
            await conn.execute(
                "UPDATE reply_outbox SET text = $1 WHERE id = $2",
                (text.strip() and text) or EMPTIED_REPLY,
                say["id"],
            )

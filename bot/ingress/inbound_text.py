"""What a member's message becomes in the transcript: attribution and the message it answers.

A reply brings the replied-to message into the turn as a short attributed quote. The quote is
looked up in the store first (archived rows included, so a message compacted away long ago is
still found) and taken from the platform's copy of it only when the store never saw it.
"""

from __future__ import annotations

from dataclasses import replace

from compactbot.bot.events import InboundMessage
from compactbot.bot.ingress.media import MediaLimits, placeholder, read_media, with_media
from compactbot.bot.llm.metering import spending_for
from compactbot.bot.services import Services
from compactbot.bot.store.protocols.revision_store import RevisionStore
from compactbot.bot.store.reply_quotes import attributed, clipped, quote, quote_body
from compactbot.compression.forgery import neutralise
from compactbot.compression.message_hints import message_hints

BOT_NAME = "the bot"


def neutralised(message: InboundMessage) -> InboundMessage:
    """The message with its text and display name unable to forge a summary (SPEC 6.9, 16)."""
    text, name = neutralise(message.text), neutralise(message.author_name)
    if text == message.text and name == message.author_name:
        return message
    return replace(message, text=text, author_name=name)


async def reply_quote(store: RevisionStore, message: InboundMessage) -> str | None:
    """`(in reply to Bob: "…")` for a reply, None for any other message."""
    if message.reply_to is None:
        return None
    found = await store.find_platform_message(message.chat_key, message.reply_to)
    if found is not None and found.text.strip():
        who = found.author_name or (BOT_NAME if found.role == "assistant" else None)
        return quote(who or attributed(found.text)[0], quote_body(found.text))
    if message.reply_to_text:
        return quote(message.reply_to_author, clipped(message.reply_to_text))
    return None


def transcript_text(
    message: InboundMessage,
    *,
    shared: bool,
    quote: str | None,
    notes: tuple[str, ...] | None = None,
) -> str:
    """`[Alice] (in reply to …) text` in a shared group session, else the text (and quote),
    then one note per file (placeholders unless `notes` are given)."""
    body = f"{quote} {message.text}" if quote else message.text
    text = f"[{message.author_name}] {body}" if shared else body
    if notes is None:
        notes = tuple(placeholder(a) for a in message.attachments)
    return "\n".join([text.rstrip(), *notes]) if notes else text


async def enrich_media(
    services: Services, message: InboundMessage, message_id: int, source: object
) -> None:
    """Read the message's files and rewrite its stored row with what they hold."""
    media = services.config.media
    vision = services.config.model.vision
    limits = MediaLimits(vision, media.max_file_bytes, media.max_document_chars)
    # Descriptions are charged to the sender, and refused once a budget is spent (SPEC 17).
    with spending_for(message.chat_key, message.author_id, "reply"):
        read = await read_media(message.attachments, source, services.llm, limits)
    settings = await services.settings_for(message.chat_key)
    shared = message.is_group and settings.memory_scope == "shared"
    quote = await reply_quote(services.revisions, message)
    text = transcript_text(message, shared=shared, quote=quote, notes=())
    # Only a message the bot will answer carries its images, and only until that answer.
    images = read.image_parts if message.addressed else ()
    content = with_media(text, read.notes, images)
    user = {"role": "user", "content": content}
    tokens = services.counter.count_message(user)
    await services.revisions.set_message_content(message_id, content, tokens, message_hints(user))


async def drop_images(services: Services, message: InboundMessage) -> None:
    """After the answer: the stored message keeps its text and descriptions, not the image."""
    if message.platform_message_id is None:
        return
    row = await services.revisions.find_platform_message(
        message.chat_key, message.platform_message_id
    )
    if row is None or not isinstance(row.content, list):
        return
    texts = [
        p.get("text", "") for p in row.content if isinstance(p, dict) and p.get("type") == "text"
    ]
    content = "\n".join(t for t in texts if t)
    user = {"role": "user", "content": content}
    tokens = services.counter.count_message(user)
    await services.revisions.set_message_content(row.id, content, tokens, message_hints(user))

"""Stored rows for a compacted transcript, keeping authorship of messages carried over verbatim."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from compactbot.bot.store.base import MessageKind, NewMessage, StoredMessage
from compactbot.compression.template import is_summary_text, unwrap_merged
from compactbot.compression.tokens import TokenCounter
from compactbot.compression.transcript import content_text


def _fingerprint(message: dict[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)


def to_rows(
    messages: Sequence[dict[str, Any]], originals: Sequence[StoredMessage], counter: TokenCounter
) -> list[NewMessage]:
    """Stored rows for the compacted list, keeping authorship of messages carried over verbatim."""
    by_print = {_fingerprint(m.to_openai()): m for m in originals}
    rows = []
    for message in messages:
        original = by_print.get(_fingerprint(message))
        # A row carried over verbatim keeps its stored kind and count: a member's text that
        # merely looks like a summary never becomes one (SPEC 6.9), and nothing stored is
        # tokenized again. Only rows the compressor wrote are new.
        verbatim = original is not None
        kind: MessageKind = original.kind if original is not None else "message"
        if original is None:
            # A summary merged into a carried message keeps that message's author.
            prior = unwrap_merged(content_text(message.get("content")))
            if prior is not None:
                original = by_print.get(_fingerprint({**message, "content": prior}))
            if is_summary_text(content_text(message.get("content"))):
                kind = "summary"
        extra: dict[str, Any] = {}
        if original is not None:
            extra = {
                "author_id": original.author_id,
                "author_name": original.author_name,
                "author_admin": original.author_admin,
                "platform_message_id": original.platform_message_id,
                "created_at": original.created_at,
            }
            extra["copy_of"] = original.id
            if not verbatim:
                extra["copied_tokens"] = original.tokens
        tokens = original.tokens if verbatim and original else counter.count_message(message)
        if verbatim and original and original.hints is not None:
            extra["hints"] = original.hints  # the same form, so the same hints
        rows.append(NewMessage.from_openai(message, tokens, kind=kind, **extra))
    return rows

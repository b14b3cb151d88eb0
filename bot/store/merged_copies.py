"""A summary merged into a copy of a member's message outlives that message's edits and delete.

A compaction may merge its summary into the first message it keeps (SPEC 6.3, 6.9). The copy
keeps the message's platform id, so an edit or a delete reaches it: only the member's part
changes, the summary stays where it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.bot.store.message_records import NewMessage
from compactbot.bot.store.rows import encode_content
from compactbot.compression.template import MERGE_DELIMITER, unwrap_merged


@dataclass(frozen=True, slots=True)
class Rewrite:
    """The stored text and format of a merged copy once its member's part changed."""

    text: str
    content_format: str


def merged_rewrite(stored: str | None, content_format: str, new_text: str | None) -> Rewrite | None:
    """The copy with its member's part replaced by `new_text` (None: deleted, the summary alone
    stays); None when no summary is merged into it (the copy simply takes the new text)."""
    if stored is None:
        return None
    if content_format == "text":
        prior = unwrap_merged(stored)
        if prior is None:
            return None
        summary = stored[len(prior) :]
        if new_text is None:
            return Rewrite(summary[len(MERGE_DELIMITER) :], "text")
        return Rewrite(new_text + summary, "text")
    if content_format != "json":
        return None
    parts = json.loads(stored)
    last = parts[-1] if isinstance(parts, list) and parts else None
    part = last.get("text") if isinstance(last, dict) else None
    # A merged list carries the summary as its last text part, with nothing before the delimiter.
    if not isinstance(part, str) or unwrap_merged(part) != "":
        return None
    if new_text is None:
        return Rewrite(part[len(MERGE_DELIMITER) :], "text")
    edited = [{"type": "text", "text": new_text}, last]
    return Rewrite(json.dumps(edited, ensure_ascii=False), "json")


def merged_tokens(copy_tokens: int, member_tokens: int, new_tokens: int) -> int:
    """A merged copy's count once its member's part (`member_tokens`) became `new_tokens`."""
    return max(0, copy_tokens - member_tokens + new_tokens)


def member_row(copies: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The newest of a message's rows (in id order) that holds only the member's message."""
    plain = [c for c in copies if merged_rewrite(c["content"], c["content_format"], "") is None]
    return (plain or copies)[-1]


def refreshed_merge(
    copy: NewMessage, member_text: str | None, member_format: str, member_tokens: int
) -> tuple[Rewrite, int] | None:
    """A merged copy's text and count once its member's row reads `member_text` (edited while
    the compaction ran); None when that is what it was merged with, or it is no merged copy."""
    if copy.copied_tokens is None or member_format != "text" or member_text is None:
        return None
    stored, content_format = encode_content(copy.content)
    if content_format == "text" and stored is not None and unwrap_merged(stored) == member_text:
        return None
    rewrite = merged_rewrite(stored, content_format, member_text)
    if rewrite is None:
        return None
    return rewrite, merged_tokens(copy.tokens, copy.copied_tokens, member_tokens)

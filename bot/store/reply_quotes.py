"""How a member's stored row quotes the message it replies to, and how the quote of a forgotten
message is taken out of it (SPEC 16)."""

from __future__ import annotations

import re
from collections.abc import Iterable

# A quote is context, not the conversation: long originals are cut to this.
QUOTE_MAX_CHARS = 400
FORGOTTEN_QUOTE = "(in reply to a forgotten message)"
# What a quote-bearing row contains, for a store to find candidates by substring.
QUOTE_MARK = "(in reply to "
_ATTRIBUTION_RE = re.compile(r"^\[([^\]\n]{1,100})\] ")
_WHO_MAX_CHARS = 200


def attributed(text: str) -> tuple[str | None, str]:
    """`text`'s "[Alice] " attribution (None without one) and the words after it."""
    found = _ATTRIBUTION_RE.match(text)
    return (found.group(1), text[found.end() :]) if found else (None, text)


def quote_body(text: str) -> str:
    """What a reply quotes of a stored message's text: unattributed, on one line, clipped."""
    return clipped(attributed(text)[1])


def clipped(text: str) -> str:
    """`text` on one line, cut to QUOTE_MAX_CHARS."""
    flat = " ".join(text.split())
    if len(flat) <= QUOTE_MAX_CHARS:
        return flat
    return flat[: QUOTE_MAX_CHARS - 1].rstrip() + "…"


def quote(who: str | None, body: str) -> str:
    return f'{QUOTE_MARK}{who or "an earlier message"}: "{body}")'


def without_quotes_of(content: str, texts: Iterable[str]) -> str:
    """`content` with every quote of one of `texts` (forgotten messages) replaced by a mark."""
    for text in texts:
        body = quote_body(text)
        if not body or f'"{body}")' not in content:
            continue
        pattern = re.compile(
            re.escape(QUOTE_MARK) + rf"[^\n]{{0,{_WHO_MAX_CHARS}}}?: \"{re.escape(body)}\"\)"
        )
        content = pattern.sub(FORGOTTEN_QUOTE, content)
    return content

"""Prepare reply text for Discord: 2000-character chunks and inert mass mentions."""

from __future__ import annotations

import re

from compactbot.adapters.chunking import classify_lines, split_message, utf16_len

# Discord's limit for message content. Measured in UTF-16 units, which is never less than the
# character count, so a chunk fits whichever of the two Discord counts.
DISCORD_MAX_CHARS = 2000
ZERO_WIDTH_SPACE = "\u200b"

_MASS_MENTION_RE = re.compile(r"@(everyone|here)\b")


def discord_chunks(text: str, limit: int = DISCORD_MAX_CHARS) -> list[str]:
    """Split Markdown for Discord, which renders it natively, keeping code fences intact."""
    return split_message(text, limit, measure=utf16_len)


def neutralize_mass_mentions(text: str) -> str:
    """Break `@everyone` / `@here` with a zero-width space; allowed_mentions is the real guard.

    Code blocks are left alone: mentions there never ping, and the space would corrupt the code.
    """
    out: list[str] = []
    for line in classify_lines(text):
        segment = text[line.start : line.end]
        if line.kind == "prose":
            segment = _MASS_MENTION_RE.sub(rf"@{ZERO_WIDTH_SPACE}\1", segment)
        out.append(segment)
    return "".join(out)

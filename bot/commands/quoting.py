"""A member's words echoed in a bot reply, shown as they were typed (SPEC 16)."""

from __future__ import annotations

import re

_BACKTICKS = re.compile(r"`+")


def code_span(text: str) -> str:
    """`text` as one Markdown code span: literal on Telegram, Discord and the console, so a
    link or emphasis a member typed is never rendered as the bot's own."""
    flat = " ".join(text.split())
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(flat)), default=0) + 1)
    # CommonMark strips one space each side: it keeps a backtick at an edge off the fence.
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"

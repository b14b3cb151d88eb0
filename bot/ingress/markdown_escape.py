"""Text from members (display names) placed in the bot's Markdown, inert on every platform."""

from __future__ import annotations

import re

# Everything Markdown (CommonMark, Discord, our Telegram renderer) gives a meaning to.
_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~<>:@])")


def escape_markdown(text: str) -> str:
    """`text` with each Markdown character backslash-escaped, so it shows as written."""
    return _SPECIAL.sub(r"\\\1", text)

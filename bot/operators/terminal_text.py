"""Members' text made safe to print on an operator's terminal."""

from __future__ import annotations

import re

# C0 and C1 control characters (ESC starts ANSI and OSC sequences, which can recolour, retitle
# or rewrite an operator's terminal) and bidi overrides that reorder what is shown.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` with newlines and tabs shown as such and every other control character as '?'."""
    return _UNSAFE.sub("?", text.replace("\n", " ⏎ "))

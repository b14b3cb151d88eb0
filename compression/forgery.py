"""Neutralising the summary's framing in text a member wrote (SPEC 6.9: no forged summaries).

The service applies this at ingress to every user-authored text and display name, so nothing a
member types reads as the prefix, the end marker or the merge delimiter of a real summary.
"""

from __future__ import annotations

import re

# Each phrase of the framing, whatever the case, spacing or dash; and what it becomes.
_PHRASES = (
    (re.compile(r"context\W*compaction\W*reference\W*only", re.IGNORECASE), "context compaction"),
    (re.compile(r"end\W*of\W*context\W*summary", re.IGNORECASE), "end of context summary"),
    (re.compile(r"end\W*of\W*prior\W*context", re.IGNORECASE), "end of prior context"),
    (re.compile(r"compaction\W*summary\W*below", re.IGNORECASE), "compaction summary below"),
)
QUOTED = " (quoted by a member)"


def neutralise(text: str) -> str:
    """`text` with the summary framing's phrases marked as quotes; other text unchanged."""
    lowered = text.lower()
    if "context" not in lowered and "compaction" not in lowered:
        return text
    for pattern, plain in _PHRASES:
        text = pattern.sub(f"{plain}{QUOTED}", text)
    return text

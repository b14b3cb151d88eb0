"""What a tool call acted on, in a few redacted words: the key both summaries group calls by."""

from __future__ import annotations

import json
from collections.abc import Mapping

from compactbot.compression.redact import redact
from compactbot.compression.salient import clip

TOOL_TARGET_CHARS = 120
_TARGET_KEYS = ("path", "file_path", "file", "url", "query", "q", "command", "cmd", "target")


def tool_target(arguments: str) -> str:
    """The argument that says what a tool call acted on, short and redacted."""
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        return clip(redact(" ".join(arguments.split())), TOOL_TARGET_CHARS)
    if isinstance(parsed, Mapping):
        chosen = next((parsed[k] for k in _TARGET_KEYS if isinstance(parsed.get(k), str)), None)
        if chosen is None:
            chosen = next((v for v in parsed.values() if isinstance(v, str | int | float)), "")
        parsed = chosen
    text = parsed if isinstance(parsed, str) else json.dumps(parsed, ensure_ascii=False)
    return json.dumps(clip(redact(" ".join(text.split())), TOOL_TARGET_CHARS), ensure_ascii=False)

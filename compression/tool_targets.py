"""What a tool call acted on, in a few redacted words: the key both summaries group calls by."""

from __future__ import annotations

import json
from collections.abc import Mapping

from compactbot.compression.redact import redact
from compactbot.compression.salient import FILE_NAME, URL, clip

TOOL_TARGET_CHARS = 120
# Argument names whose values identify what was worked on (a ticket, a branch, a commit).
_ID_KEYS = frozenset({"id", "ids", "ticket", "issue", "branch", "commit", "sha", "ref"})
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


def tool_references(arguments: str) -> tuple[str, ...]:
    """The files, URLs and identifiers a tool call's arguments name (SPEC 6.6: links and facts)."""
    try:
        parsed = json.loads(arguments) if arguments else {}
    except ValueError:
        parsed = arguments
    found: list[str] = []
    for key, value in _string_values(parsed, ""):
        found += URL.findall(value) + FILE_NAME.findall(value)
        name = key.lower()
        if (name in _ID_KEYS or name.endswith("_id")) and 0 < len(value) <= TOOL_TARGET_CHARS:
            found.append(f"{key}={value}")
    return tuple(dict.fromkeys(found))


def _string_values(value: object, key: str) -> list[tuple[str, str]]:
    """Every string (or number, as text) in parsed JSON, with the name it was given under."""
    if isinstance(value, str):
        return [(key, value)]
    if isinstance(value, bool) or value is None:
        return []
    if isinstance(value, int | float):
        return [(key, str(value))]
    if isinstance(value, Mapping):
        return [pair for k, v in value.items() for pair in _string_values(v, str(k))]
    if isinstance(value, list):
        return [pair for item in value for pair in _string_values(item, key)]
    return []

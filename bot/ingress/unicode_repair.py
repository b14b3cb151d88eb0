"""Lone UTF-16 surrogates, which JSON allows ("\\ud800") and UTF-8 storage refuses, made safe."""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\N{REPLACEMENT CHARACTER}"
_SURROGATE = re.compile("[\ud800-\udfff]")


def repair_text(text: str) -> str:
    """`text` with each unpaired surrogate replaced by U+FFFD; a split pair is joined again."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def repair_json(value: Any) -> Any:
    """A copy of a decoded JSON value with every string (keys too) repaired."""
    if isinstance(value, str):
        return repair_text(value)
    if isinstance(value, dict):
        return {repair_json(key): repair_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [repair_json(item) for item in value]
    return value

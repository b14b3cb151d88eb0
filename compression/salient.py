"""How a chat's text is cut and matched: sentences, links, file names, duplicates.

What a sentence says (rule, preference, action) is statement_kind's to tell.
"""

from __future__ import annotations

import re

SENTENCE_MAX_CHARS = 300

# Chinese and Japanese full stops end a sentence without a space after them.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|(?<=[。！？；])|\n+")
MENTION = re.compile(r"@([A-Za-z0-9_][\w.-]{0,31})")
FILE_EXTENSIONS = (
    "py|js|ts|tsx|jsx|md|json|ya?ml|toml|txt|csv|tsv|pdf|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|"
    "zip|tar|gz|sh|html?|css|go|rs|java|kt|rb|php|sql|log|ini|cfg|conf|env|ipynb|mp3|mp4|wav"
)
_DIGIT = re.compile(r"\d")
_ASCII_DIGITS = "0123456789"
URL = re.compile(r"https?://[^\s<>\"')\]]+[^\s<>\"')\].,;:!?]")
FILE_NAME = re.compile(rf"(?<![\w/@.-])(?:[\w.-]+/)*[\w-][\w.-]*\.(?:{FILE_EXTENSIONS})\b")
_TAG = re.compile(r"^\[[^\]]{1,80}\]\s*")


def sentences(text: str) -> list[str]:
    """Non-empty sentences of `text`, whitespace collapsed, each at most 300 chars."""
    found: list[str] = []
    for raw in _SENTENCE_END.split(text):
        sentence = " ".join(raw.split())
        if sentence:
            found.append(clip(sentence, SENTENCE_MAX_CHARS))
    return found


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def norm_key(line: str) -> str:
    """Lowercase letters and digits of a line without its speaker tag: the duplicate test."""
    text = _TAG.sub("", line.strip().lstrip("-*• ").strip())
    return "".join(ch for ch in text.lower() if ch.isalnum())


def has_digit(text: str) -> bool:
    """`_DIGIT.search(text)`; an ASCII text (known in O(1)) takes ten memchr scans instead,
    a quarter of the expression's cost."""
    if text.isascii():
        return any(map(text.__contains__, _ASCII_DIGITS))
    return _DIGIT.search(text) is not None

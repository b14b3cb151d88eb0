"""How much a summary loses without a line (`text_weight`): its exact values, its label, a
"remember" marker, and whether it sets a rule."""

from __future__ import annotations

import re

from compactbot.compression.line_subjects import split_label
from compactbot.compression.salient import FILE_EXTENSIONS, FILE_NAME, has_digit
from compactbot.compression.statement_kind import statement_kind

# Lines weighed, remembered across calls: a line's weight depends on its text alone.
# Exact values a summary must not lose: dates, amounts, codes mixing letters and digits.
_STRONG_VALUE = re.compile(
    r"\d{4}-\d{2}-\d{2}|[$€£¥₽]\s?\d|\d\s?(?:€|eur|usd|gbp)\b|\d{1,3}(?:,\d{3})+|"
    r"\b[A-Z]{2,}[-_]?[A-Z0-9]*\d[\w-]*|\b[A-Za-z]+\d+[A-Za-z]+\w*|\b[A-Za-z]{3,}\d+\b|"
    r"\bv?\d+\.\d+\.\d+"
)
_NUMBER = re.compile(r"\b\d{3,}\b")
_WEAK_VALUE = re.compile(
    r"\d|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", re.IGNORECASE
)
# Someone asking the group to keep something: what people expect a memory to hold.
KEEP_MARKERS = (
    "for the record",
    "remember i said",
    "remember this",
    "i suggested",
    "i was the one",
    "codename",
    "keep in mind",
    "don't forget",
)
# Long lines are mostly chatter; a planted rule or value is a sentence or two.
LONG_LINE_CHARS = (160, 240)
CURRENCIES = ("€", "£", "¥", "₽")
FILE_EXTENSION = re.compile(rf"\.(?:{FILE_EXTENSIONS})\b")


def text_weight(text: str) -> int:
    """How much a summary loses without this line: exact values, labels, "remember" markers,
    and a rule set for the group."""
    label, _ = split_label(text)
    lowered = text.lower()
    keep = any(marker in lowered for marker in KEEP_MARKERS)
    normative = statement_kind(text) == "rule"
    length = sum(len(text) > limit for limit in LONG_LINE_CHARS)
    return (
        value_weight(text)
        + (2 if keep else 0)
        + (2 if label else 0)
        + (2 if normative else 0)
        - length
    )


def value_weight(text: str) -> int:
    """3 for an exact value (a date, an amount, a code, a URL or file), 2 for a long number,
    1 for any other number or a weekday."""
    if _names_a_place(text):
        return 3
    digit = has_digit(text)
    if digit and _STRONG_VALUE.search(text):
        return 3
    if digit and _NUMBER.search(text):
        return 2
    return 1 if digit or _names_weekday(text) else 0


def _names_a_place(text: str) -> bool:
    """A URL, an example domain or a file name: an exact value by itself."""
    return "://" in text or ".example" in text or ("." in text and bool(FILE_NAME.search(text)))


def _names_weekday(text: str) -> bool:
    return "day" in text.lower() and _WEAK_VALUE.search(text) is not None

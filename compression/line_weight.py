"""How much a summary loses without a line (`text_weight`), and the gate that tells, without
an expression, that a line cannot weigh enough to matter (`may_weigh`)."""

from __future__ import annotations

import re
from functools import lru_cache

from ahocorasick_rs import MATCHKIND_STANDARD, BytesAhoCorasick, Implementation

from compactbot.compression.line_subjects import split_label
from compactbot.compression.salient import FILE_EXTENSIONS, FILE_NAME, has_digit

# Lines weighed, remembered across calls: a line's weight depends on its text alone.
WEIGHT_CACHE_TEXTS = 65_536
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
# Wording that sets a standing rule for the group rather than describing a habit.
NORMATIVE = ("from now on", "not allowed", "nowhere else", "mandatory", "forbidden",
              "in this group", "in this chat", "prohibited")  # fmt: skip
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
# may_weigh()'s markers by what finding one means: a value or a standing rule (the line may
# weigh 3), a "remember" marker (2), or a weekday's "day" (the 1 that makes a marker's 2 a 3).
_STRONG, _KEEP, _DAY = range(3)
_MARKERS_BY_KIND = (
    (_STRONG, (":", "$", *"0123456789", "://", ".example", *CURRENCIES, *NORMATIVE)),
    (_KEEP, KEEP_MARKERS),
    (_DAY, ("day",)),
)
_MARKER_KINDS = tuple(kind for kind, markers in _MARKERS_BY_KIND for _ in markers)
_WEIGHT_MARKERS = BytesAhoCorasick(
    [marker.encode() for _, markers in _MARKERS_BY_KIND for marker in markers],
    matchkind=MATCHKIND_STANDARD,
    implementation=Implementation.DFA,
)


@lru_cache(maxsize=WEIGHT_CACHE_TEXTS)
def text_weight(text: str) -> int:
    """How much a summary loses without this line: exact values, labels, "remember" markers."""
    label, _ = split_label(text)
    lowered = text.lower()
    keep = any(marker in lowered for marker in KEEP_MARKERS)
    normative = any(marker in lowered for marker in NORMATIVE)
    length = sum(len(text) > limit for limit in LONG_LINE_CHARS)
    return (
        value_weight(text)
        + (2 if keep else 0)
        + (2 if label else 0)
        + (2 if normative else 0)
        - length
    )


def may_weigh(text: str, minimum: int, lowered: str | None = None) -> bool:
    """False when no line of `text` can reach `text_weight` >= `minimum` (2 or more): without
    a digit, link, file, currency, label or marker every line weighs at most a weekday's 1.
    `lowered`: `text.lower()`, if the caller has it."""
    if minimum <= 1:
        return True
    # One automaton pass over the lowered text for every marker, instead of a scan per marker
    # (a superset of what the exact tests find, which is all a gate needs); overlapping, so
    # that no marker hides another. Searched as UTF-8, in which a marker's bytes occur only
    # where its characters do; "surrogatepass" takes a lone surrogate too, which no marker holds.
    found = _WEIGHT_MARKERS.find_matches_as_indexes(
        (lowered or text.lower()).encode("utf-8", "surrogatepass"), True
    )
    ascii = text.isascii()
    if ("." in text and FILE_EXTENSION.search(text)) or (not ascii and has_digit(text)):
        return True  # a file name, or digits of other scripts
    if not found:
        return False
    kinds = {_MARKER_KINDS[m[0]] for m in found}
    return _STRONG in kinds or (_KEEP in kinds and (minimum < 3 or _DAY in kinds))


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


def has_value(text: str) -> bool:
    """`value_weight(text) > 0`, without telling exact values from plain numbers."""
    return _names_a_place(text) or has_digit(text) or _names_weekday(text)


def _names_a_place(text: str) -> bool:
    """A URL, an example domain or a file name: an exact value by itself."""
    return "://" in text or ".example" in text or ("." in text and bool(FILE_NAME.search(text)))


def _names_weekday(text: str) -> bool:
    return "day" in text.lower() and _WEAK_VALUE.search(text) is not None

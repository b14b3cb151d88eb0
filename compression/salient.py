"""Which sentences of a chat carry what compression usually loses: rules, decisions, values.

Keyword heuristics (SPEC 6.6), tuned for recall: a false positive costs a line of the
deterministic summary, a miss loses a constraint for good.
"""

from __future__ import annotations

import re
from typing import Literal

Category = Literal["decision", "preference", "rule", "action", "value"]

SENTENCE_MAX_CHARS = 300

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)|\n+")
_GROUP_OWNER = re.compile(r"\bwe(?:'ll|\s+will)\b", re.IGNORECASE)
_EMPHASIS = re.compile(r"[*_`\"]")
_DECISION = re.compile(
    r"\b(?:we\s+decided|decided\s+(?:to|that|on)|(?:we\s+)?agreed|let'?s\s+go\s+with|"
    r"let\s+us\s+go\s+with|we'?ll\s+go\s+with|we\s+will\s+go\s+with|going\s+with|settled\s+on|"
    r"final\s+decision)\b|\bdecision\s*:",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(?:i\s+prefer|i'd\s+prefer|i\s+would\s+prefer|i\s+(?:really\s+)?like|i\s+love|"
    r"i'd\s+rather|i\s+would\s+rather|i\s+(?:don't|do\s+not)\s+like|i\s+dislike|i\s+hate|"
    r"my\s+preference)\b",
    re.IGNORECASE,
)
# "I don't know" is not a rule; "we don't deploy on Fridays" is.
_RULE = re.compile(
    r"\b(?:never|must|mustn't|always|only|(?<!\bi\s)(?:don't|do\s+not)|not\s+allowed|"
    r"no\s+\w+(?:\s+\w+)?\s+(?:is\s+|are\s+)?allowed|forbidden|prohibited|required|mandatory|"
    r"rule\s*:)",
    re.IGNORECASE,
)
ACTION = re.compile(
    r"\b(?:will|i'll|we'll|todo|to-do|action\s+item|please|should|needs?\s+to|going\s+to)\b",
    re.IGNORECASE,
)
MENTION = re.compile(r"@([A-Za-z0-9_][\w.-]{0,31})")
_SELF_OWNER = re.compile(
    r"\b(?:i'll|i\s+will|i'm\s+going\s+to|i\s+am\s+going\s+to|i\s+can\s+take|todo|to-do|"
    r"action\s+item)\b",
    re.IGNORECASE,
)
_NAMED_OWNER = re.compile(
    r"\b([A-Z][\w-]{1,31})\s+(?:will|should|needs\s+to|is\s+going\s+to|has\s+to)\b"
)
_VOCATIVE = re.compile(r"^([A-Z][\w-]{1,31})\s*,\s*(?:please|can\s+you|could\s+you)\b")
_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec"
FILE_EXTENSIONS = (
    "py|js|ts|tsx|jsx|md|json|ya?ml|toml|txt|csv|tsv|pdf|docx?|xlsx?|pptx?|png|jpe?g|gif|svg|"
    "zip|tar|gz|sh|html?|css|go|rs|java|kt|rb|php|sql|log|ini|cfg|conf|env|ipynb|mp3|mp4|wav"
)
_DIGIT = re.compile(r"\d")
_ASCII_DIGITS = "0123456789"
URL = re.compile(r"https?://[^\s<>\"')\]]+[^\s<>\"')\].,;:!?]")
FILE_NAME = re.compile(rf"(?<![\w/@.-])(?:[\w.-]+/)*[\w-][\w.-]*\.(?:{FILE_EXTENSIONS})\b")
_VALUE = re.compile(
    rf"\d|[$€£¥₽]|\b(?:{_MONTHS})[a-z]*\.?\s+\d|"
    r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|tomorrow|tonight)\b",
    re.IGNORECASE,
)
_SUBJECT = re.compile(
    r"^(?:(?:the|our|my|your|their|a|an)\s+)?(?:(?:new|updated|current|final|latest|old)\s+)?"
    r"(?P<subject>[^\s:=][^:=]{0,60}?)\s*"
    r"(?:\s(?:is|are|was|were|will\s+be|has\s+been|changed\s+to|moved\s+to|set\s+to)(?:\s+now)?\s"
    r"|\s*[=:]\s|\s*→\s)",
    re.IGNORECASE,
)
# Labels that start many unrelated lines and so never identify one subject.
_GENERIC_SUBJECTS = frozenset(
    {
        *("decision", "note", "update", "fyi", "todo", "action item", "rule", "question"),
        *("answer", "re", "reminder", "ps", "warning", "important", "i", "it", "this", "that"),
        *("there", "he", "she", "they", "we", "you", "what", "who", "which"),
    }
)
_TAG = re.compile(r"^\[[^\]]{1,80}\]\s*")
# Openers that precede the subject: "Update: the deadline is …", "Actually, the budget is …".
_OPENER = re.compile(
    r"^(?:(?:update|note|fyi|correction|actually|ok|okay|so|also|btw|reminder|ps|heads up)"
    r"\s*[:,!-]?\s+)+",
    re.IGNORECASE,
)


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


def category(sentence: str, known_names: frozenset[str] = frozenset()) -> Category | None:
    """The first category a sentence carries, most specific first."""
    if _DECISION.search(sentence):
        return "decision"
    if _PREFERENCE.search(sentence):
        return "preference"
    if _RULE.search(sentence):
        return "rule"
    if ACTION.search(sentence) and action_owner(sentence, "speaker", known_names):
        return "action"
    if _VALUE.search(sentence) or URL.search(sentence) or FILE_NAME.search(sentence):
        return "value"
    return None


def action_owner(sentence: str, speaker: str, known_names: frozenset[str]) -> str | None:
    """Who an action item belongs to: a mention, a named person, the speaker, or the group."""
    mention = MENTION.search(sentence)
    if mention:
        return mention.group(1)
    vocative = _VOCATIVE.search(sentence)
    if vocative:
        return vocative.group(1)
    # A capitalised word before "will" is a person only when we know the name ("Then Bob will").
    named = _NAMED_OWNER.search(sentence)
    if named and named.group(1) in known_names:
        return named.group(1)
    if _SELF_OWNER.search(sentence):
        return speaker
    if _GROUP_OWNER.search(sentence):
        return "the group"
    return None


def subject_key(line: str) -> str | None:
    """ "budget" for "[Alice] The budget is $5,000" or "Budget: $5,000"; None when unclear."""
    text = _OPENER.sub("", _TAG.sub("", line.strip().lstrip("-*• ").strip()))
    match = _SUBJECT.match(text)
    if match is None:
        return None
    words = _EMPHASIS.sub("", match["subject"]).lower().split()
    if not words or len(words) > 5 or " ".join(words) in _GENERIC_SUBJECTS:
        return None
    if not any(ch.isalpha() for ch in words[0]):
        return None
    return " ".join(words)


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

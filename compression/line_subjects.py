"""What a line says it is about: its label ("FACT:", "Rule for this group:") and its subject
("launch date"), never the label taken for the subject."""

from __future__ import annotations

import re
from typing import Literal

FeatureKind = Literal["rule", "decision", "fact", "preference", "action"]

SUBJECT_MAX_WORDS = 6
SUBJECT_SCAN_CHARS = 200
MAX_LABELS = 3

_LABEL = re.compile(r"^(?P<label>[A-Za-z][A-Za-z _-]{0,28}?)\s*:\s+(?=\S)")
_LABEL_WORD = re.compile(r"[a-z]+")
# Labels that start many unrelated lines; the kind they hint at, if any.
_LABEL_KINDS: dict[str, FeatureKind | None] = {
    **dict.fromkeys(("fact", "facts", "value", "info", "key fact", "data"), "fact"),
    **dict.fromkeys(("rule", "rules", "constraint", "house rule", "chat rule"), "rule"),
    **dict.fromkeys(("safety rule", "policy", "requirement", "limit", "group rule"), "rule"),
    **dict.fromkeys(("decision", "final decision", "decided", "resolution"), "decision"),
    **dict.fromkeys(("action", "action item", "todo", "to-do", "task"), "action"),
    **dict.fromkeys(("ask", "asks", "request", "requests"), "action"),
    **dict.fromkeys(("preference", "preferences", "pref", "user preference"), "preference"),
    **dict.fromkeys(("note", "notes", "update", "fyi", "reminder", "correction"), None),
    **dict.fromkeys(("important", "warning", "ps", "re", "btw", "heads up", "nb"), None),
}
# A label of several words is still a label when one of them is ("Rule for this group:").
_LABEL_WORDS = frozenset({"rule", "rules", "note", "fact", "constraint", "decision", "update",
                          "reminder", "policy", "todo", "fyi", "ask", "request",
                          "preference", "action"})  # fmt: skip
_TAG = re.compile(r"^\[[^\]]{1,80}\]\s*")
_OPENER = re.compile(
    r"^(?:(?:update|note|fyi|correction|actually|ok|okay|so|also|btw|reminder|ps|heads up|"
    r"well|and|but|oh)\s*[:,!-]?\s+)+",
    re.IGNORECASE,
)
COPULA = re.compile(
    r"\s(?:is|are|was|were|will\s+be|has\s+been|have\s+been|changed\s+to|moved\s+to|"
    r"moves\s+to|set\s+to|becomes|equals)(?:\s+now)?\s|\s*[=:]\s|\s*→\s",
    re.IGNORECASE,
)
_ARTICLE = re.compile(
    r"^(?:(?:the|our|a|an|this|that|their|your)\s+)?"
    r"(?:(?:new|updated|current|final|latest|old)\s+)?",
    re.IGNORECASE,
)
_NOT_SUBJECTS = frozenset(
    {
        *("i", "it", "this", "that", "there", "he", "she", "they", "we", "you", "what", "who"),
        *("which", "here", "thing", "one", "everything", "nothing", "something", "which one"),
        *("answer", "question", "the answer", "so", "mine", "yours", "today", "tomorrow"),
    }
)
_QUOTING = re.compile(r"[*_`\"']")


def split_label(text: str) -> tuple[str | None, str]:
    """("FACT", "The launch codename is PELICAN") for "FACT: The launch codename is PELICAN"."""
    if ":" not in text[:32]:
        return None, text
    match = _LABEL.match(_TAG.sub("", text))
    if match is None:
        return None, text
    label = match["label"].strip()
    lowered = label.lower()
    known = (
        lowered in _LABEL_KINDS
        or (label.isupper() and len(label) > 1)
        or any(word in _LABEL_WORDS for word in _LABEL_WORD.findall(lowered))
    )
    return (label, _TAG.sub("", text)[match.end() :]) if known else (None, text)


def label_kind(label: str) -> FeatureKind | None:
    """The kind a label names: "Rule for this group" is a rule, "Note" names none."""
    lowered = label.lower()
    if lowered in _LABEL_KINDS:
        return _LABEL_KINDS[lowered]
    words = _LABEL_WORD.findall(lowered)
    return next((_LABEL_KINDS[w] for w in words if _LABEL_KINDS.get(w)), None)


def subject_of(text: str) -> tuple[str | None, bool]:
    """What a statement is about ("budget cap"), and whether it is the speaker's own ("my …")."""
    if COPULA.search(text[:SUBJECT_SCAN_CHARS]) is None:
        return None, False
    body = _OPENER.sub("", _TAG.sub("", text.strip().lstrip("-*• ").strip()))
    for _ in range(MAX_LABELS):  # "RULE: House rule: never …" carries two labels
        label, inner = split_label(body)
        if not label:
            break
        body = _OPENER.sub("", inner)
    match = COPULA.search(body[:120])
    if match is None or match.start() == 0:
        return None, False
    head = _QUOTING.sub("", body[: match.start()]).strip()
    first_person = head.lower().startswith(("my ", "mine "))
    if first_person:
        head = head.split(" ", 1)[1] if " " in head else ""
    head = _ARTICLE.sub("", head)
    words = head.lower().split()
    if not words or len(words) > SUBJECT_MAX_WORDS or " ".join(words) in _NOT_SUBJECTS:
        return None, False
    if not any(ch.isalpha() for ch in words[0]) or words[0] in ("i", "you", "we", "they"):
        return None, False
    return " ".join(words), first_person

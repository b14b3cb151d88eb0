"""What one message says that a memory must keep (SPEC 6.6): computed once per message text.

`message_features` is pure (the extractor memoises it per text for one call). Kinds come from
the wording (statement_kind) or a label; subjects are real subjects ("launch date"), never a
line's label ("FACT:").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from compactbot.compression.line_subjects import (
    SUBJECT_SCAN_CHARS,
    FeatureKind,
    label_kind,
    split_label,
    subject_of,
)
from compactbot.compression.line_weight import (
    CURRENCIES,
    FILE_EXTENSION,
    KEEP_MARKERS,
    LONG_LINE_CHARS,
    value_weight,
)
from compactbot.compression.salient import (
    FILE_NAME,
    MENTION,
    URL,
    clip,
    has_digit,
    sentences,
)
from compactbot.compression.statement_kind import statement_kind

# A message this short is one entry: "CONSTRAINT: Spend cap is €800. Never exceed it." keeps
# its cap and its rule together instead of two half-entries.
WHOLE_MESSAGE_CHARS = 280
ENTRY_MAX_CHARS = 400

_SELF_OWNER = re.compile(
    r"\b(?:i'll|i\s+will|i'm\s+going\s+to|i\s+am\s+going\s+to|i\s+can\s+take|i'?d\s+like\s+to)\b|"
    r"我来|我会|我负责",
    re.IGNORECASE,
)
_NAMED_OWNER = re.compile(r"\b([A-Z][\w-]{1,31})\s+(?:will|should|needs\s+to|has\s+to)\b")
_VOCATIVE = re.compile(
    r"^([A-Z][\w-]{1,31})\s*,\s*(?:please|can\s+you|could\s+you|would\s+you|will\s+you)\b"
)
_DUE = re.compile(
    r"\b(?:by|before|due|until|on)\s+(\d{4}-\d{2}-\d{2}|(?:mon|tues|wednes|thurs|fri|satur|sun)"
    r"day|tomorrow|tonight|next\s+week)\b",
    re.IGNORECASE,
)
# A label naming someone's request ("ALICE-ASK:", "Request:"): the speaker asks, others act.
_ASK_LABEL_WORDS = frozenset({"ask", "asks", "request", "requests"})
_LABEL_WORD = re.compile(r"[a-z]+")
# Which kind a message of several kinds is filed under: the most important first (SPEC 6.11).
_KIND_ORDER: tuple[FeatureKind, ...] = ("rule", "preference", "action", "decision")
_WEEKDAYS = frozenset(
    {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}
)
# The first word of every line_subjects.COPULA alternative, and how far into a line a
# subject's verb can be.
_COPULA_WORDS = frozenset({"is", "are", "was", "were", "be", "been", "changed", "moved",
                           "moves", "set", "becomes", "equals"})  # fmt: skip
COPULA_HEAD_WORDS = 16


@dataclass(frozen=True, slots=True)
class Candidate:
    """One thing worth remembering in a message, before the speaker and date are known."""

    kind: FeatureKind
    text: str
    subject: str | None
    weight: int  # how much a summary loses without it: values, labels, "remember" markers
    first_person: bool  # "my pick …": the subject belongs to the speaker
    owner_hint: str | None = None  # a mention or a name addressed ("Bob, please …")
    named_owner: str | None = None  # "Bob will …": an owner only if Bob is in the chat
    self_owned: bool = False
    due: str | None = None


@dataclass(frozen=True, slots=True)
class Features:
    candidates: tuple[Candidate, ...]
    links: tuple[str, ...]
    questions: tuple[str, ...]


NO_FEATURES = Features((), (), ())


def message_features(text: str, from_user: bool) -> Features:
    """The candidates, links and questions of one (redacted) message text."""
    if not text or text.isspace():
        return NO_FEATURES
    links: tuple[str, ...] = ()
    if _may_link(text):
        links = tuple(dict.fromkeys([*URL.findall(text), *FILE_NAME.findall(text)]))
    pieces, whole = sentences(text), _whole(text)
    if whole is not None:
        found = _candidate(whole, pieces)
        candidates = [found] if found is not None else []
    else:
        candidates = [c for s in pieces if (c := _candidate(s, [s])) is not None]
    questions: tuple[str, ...] = ()
    if from_user:
        # A request ("can you book the venue?") is an action item, not an open question.
        questions = tuple(
            s for s in pieces if s.endswith(("?", "？")) and statement_kind(s) != "action"
        )
    if not (candidates or links or questions):
        return NO_FEATURES
    return Features(tuple(candidates), links, questions)


def action_owner(found: Candidate, speaker: str, names: Sequence[str]) -> str:
    """Who an action item is for: the one addressed or named, the speaker who took it on,
    else the group (a request to no one in particular)."""
    named = found.named_owner if found.named_owner in names else None
    return found.owner_hint or named or (speaker if found.self_owned else "the group")


def _may_link(text: str) -> bool:
    return "://" in text or ("." in text and FILE_EXTENSION.search(text) is not None)


def _whole(text: str) -> str | None:
    """The message as one entry, whitespace collapsed; None when it is read by sentences."""
    collapsed = " ".join(text.split())
    return clip(collapsed, ENTRY_MAX_CHARS) if len(collapsed) <= WHOLE_MESSAGE_CHARS else None


def _may_hold_value(lowered: str, typed: bool) -> bool:
    """Whether value_weight() can find anything: digits, money, places, or a weekday that is
    what a statement sets ("the deploy day is Tuesday"), not chatter ("see you thursday")."""
    return bool(
        has_digit(lowered)
        or "$" in lowered
        or "://" in lowered
        or ".example" in lowered
        or (not lowered.isascii() and any(map(lowered.__contains__, CURRENCIES)))
        or ("." in lowered and FILE_EXTENSION.search(lowered))
        or (
            not _WEEKDAYS.isdisjoint(lowered.translate(_WORD_SEPARATORS).split())
            and (typed or _weekday_statement(lowered))
        )
    )


_WORD_SEPARATORS = str.maketrans(dict.fromkeys('.,;:!?()[]{}<>"*_`/|=+~#', " "))


def _weekday_statement(lowered: str) -> bool:
    # A statement of a day is a short sentence, and its subject a few words before the verb.
    if len(lowered) > LONG_LINE_CHARS[0]:
        return False
    head = lowered[:SUBJECT_SCAN_CHARS].split(None, COPULA_HEAD_WORDS)[:COPULA_HEAD_WORDS]
    if _COPULA_WORDS.isdisjoint(head) and not any(
        map(lowered[:SUBJECT_SCAN_CHARS].__contains__, ":=→")
    ):
        return False
    return subject_of(lowered)[0] is not None


def _candidate(text: str, pieces: list[str]) -> Candidate | None:
    label, body = split_label(text)
    lowered = text.lower()
    labelled = label_kind(label) if label else None
    kind = labelled or _kind(pieces)
    value = value_weight(text) if _may_hold_value(lowered, kind is not None) else 0
    keep = any(marker in lowered for marker in KEEP_MARKERS)
    if kind is None:
        if not (value or keep or label):
            return None  # no wording, value or label that a memory keeps: chatter
        kind = "fact"
    weight = value + (2 if keep else 0) + (2 if label else 0)
    subject, first_person = subject_of(body) if kind != "action" else (None, False)
    if kind != "action":
        return Candidate(kind, text, subject, weight, first_person)
    mention = MENTION.search(text)
    vocative = _VOCATIVE.match(body)
    named = _NAMED_OWNER.search(text)
    asked = label is not None and not _ASK_LABEL_WORDS.isdisjoint(
        _LABEL_WORD.findall(label.lower())
    )
    due = _DUE.search(text)
    return Candidate(
        kind=kind,
        text=text,
        subject=None,
        weight=weight,
        first_person=False,
        owner_hint=mention.group(1) if mention else (vocative.group(1) if vocative else None),
        named_owner=named.group(1) if named else None,
        self_owned=bool(_SELF_OWNER.search(text)) or (labelled == "action" and not asked),
        due=due.group(1) if due else None,
    )


def _kind(pieces: list[str]) -> FeatureKind | None:
    """The most important kind any sentence of the text states, by its wording."""
    kinds = {statement_kind(_strip_opening(piece)) for piece in pieces}
    return next((kind for kind in _KIND_ORDER if kind in kinds), None)


def _strip_opening(text: str) -> str:
    label, body = split_label(text)
    return body if label else text

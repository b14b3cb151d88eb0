"""What one message says that a memory must keep (SPEC 6.6): computed once per message text.

`message_features` is pure (the extractor memoises it per text for one call, so nothing of a
call outlives it), and cheap word-set tests run before any regular expression. Subjects are
real subjects ("launch date"), never a line's label ("FACT:").
"""

from __future__ import annotations

import re
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
    has_value,
    value_weight,
)
from compactbot.compression.salient import (
    ACTION,
    FILE_NAME,
    MENTION,
    URL,
    clip,
    has_digit,
    sentences,
)

# A message this short is one entry: "CONSTRAINT: Spend cap is €800. Never exceed it." keeps
# its cap and its rule together instead of two half-entries.
WHOLE_MESSAGE_CHARS = 280
ENTRY_MAX_CHARS = 400

_DECISION = re.compile(
    r"\b(?:we\s+decided|decided\s+(?:to|that|on)|(?:we\s+)?agreed|let'?s\s+go\s+with|"
    r"we'?ll\s+go\s+with|we\s+will\s+go\s+with|going\s+with|settled\s+on|final\s+decision)\b|"
    r"\bdecision\s*:",
    re.IGNORECASE,
)
_STRONG_PREFERENCE = re.compile(
    r"\b(?:i\s+prefer|i'd\s+prefer|i\s+would\s+prefer|i'd\s+rather|i\s+would\s+rather|"
    r"my\s+preference|my\s+favou?rite)\b",
    re.IGNORECASE,
)
# A rule sets what the group does ("Never paste …", "we don't deploy on Fridays", "every
# expense must carry …"); "I have never been to Utah" and "that must have been scary" do not.
_RULE = re.compile(
    r"^(?:never|always|only|don'?t|do\s+not|no\s+\w+|please\s+(?:never|always|don'?t))\b|"
    r"\b(?:we|you|everyone|everybody|nobody|no\s+one|members|each|every\s+\w+(?:\s+\w+)?)\s+"
    r"(?:must|mustn't|never|always|only|should\s+(?:never|always)|(?:do|does)\s+not|don'?t)\b|"
    r"\b(?:not\s+allowed|no\s+\w+(?:\s+\w+)?\s+(?:is\s+|are\s+)?allowed|forbidden|prohibited|"
    r"mandatory|required\s+to|only\s+(?:go|goes|use|send|deploy)|must\s+not|rule\s*:)",
    re.IGNORECASE,
)
_SELF_OWNER = re.compile(
    r"\b(?:i'll|i\s+will|i'm\s+going\s+to|i\s+am\s+going\s+to|i\s+can\s+take)\b", re.IGNORECASE
)
_NAMED_OWNER = re.compile(r"\b([A-Z][\w-]{1,31})\s+(?:will|should|needs\s+to|has\s+to)\b")
_VOCATIVE = re.compile(r"^([A-Z][\w-]{1,31})\s*,\s*(?:please|can\s+you|could\s+you)\b")
_DUE = re.compile(
    r"\b(?:by|before|due|until|on)\s+(\d{4}-\d{2}-\d{2}|(?:mon|tues|wednes|thurs|fri|satur|sun)"
    r"day|tomorrow|tonight|next\s+week)\b",
    re.IGNORECASE,
)
# Word gates per kind of signal: one split of the line into a set, then set tests, before any
# expression runs. Each word set covers what that kind's expression can match (all of them
# anchor on a word boundary); a phrase gate is tested only when its trigger word is present.
_GATE_WORDS: tuple[tuple[str, frozenset[str]], ...] = (
    ("decision", frozenset({"decided", "agreed", "settled", "decision"})),
    ("preference", frozenset({"prefer", "preference", "rather", "favorite", "favourite"})),
    ("rule", frozenset({"never", "must", "mustn't", "always", "only", "don't", "dont", "no",
                        "allowed", "forbidden", "prohibited", "mandatory", "required", "rule",
                        "rules"})),
    ("action", frozenset({"will", "i'll", "we'll", "todo", "to-do", "action", "please",
                          "should", "need", "needs", "going"})),
)  # fmt: skip
# (signal, trigger words, phrases): the phrases are looked for only when a trigger is present.
_GATE_PHRASES: tuple[tuple[str, frozenset[str], tuple[str, ...]], ...] = (
    ("decision", frozenset({"with"}), ("go with", "going with")),
    ("rule", frozenset({"not"}), ("do not", "does not")),
    ("keep", frozenset({"record"}), ("for the record",)),
    ("keep", frozenset({"remember"}), ("remember i said", "remember this")),
    ("keep", frozenset({"suggested", "one"}), ("i suggested", "i was the one")),
    ("keep", frozenset({"codename", "codenames", "codename's"}), ("codename",)),
    ("keep", frozenset({"mind", "forget"}), ("keep in mind", "don't forget")),
    # Who would own an action: a mention, "I'll", "I will …" or "Name, please …".
    ("owner", frozenset({"i", "i'm"}), ("i will", "i'm going to", "i am going to", "i can take")),
    ("owner", frozenset({"please", "can", "could"}), (",",)),
)
# The same by word: the signals a word gates, the (signal, phrases) a word triggers.
_GATES_OF: dict[str, tuple[str, ...]] = {
    word: tuple(name for name, gate in _GATE_WORDS if word in gate)
    for word in frozenset().union(*(gate for _, gate in _GATE_WORDS))
}
_PHRASES_OF: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    word: tuple((name, phrases) for name, triggers, phrases in _GATE_PHRASES if word in triggers)
    for word in frozenset().union(*(triggers for _, triggers, _ in _GATE_PHRASES))
}
_SIGNAL_WORDS = frozenset(_GATES_OF) | frozenset(_PHRASES_OF)
# Punctuation around words; apostrophes, "@" and hyphens stay ("don't", "to-do").
_WORD_SEPARATORS = str.maketrans(dict.fromkeys('.,;:!?()[]{}<>"*_`/|=+~#', " "))
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
    gate = _gate(text, from_user)
    if gate is None:
        return Features((), links, ()) if links else NO_FEATURES
    asks, signals = gate
    pieces, whole = sentences(text), _whole(text)
    if whole is not None:
        found = _candidate(whole, pieces, signals)
        candidates = [found] if found is not None else []
    else:
        candidates = [c for s in pieces if (c := _candidate(s, [s])) is not None]
    questions = tuple(s for s in pieces if s.endswith("?")) if asks else ()
    return Features(tuple(candidates), links, questions)


def has_features(text: str, from_user: bool) -> bool:
    """Whether message_features() finds anything in the text, without building what it finds
    (the store's FEATURELESS hint: no subjects, no value weights, no candidates)."""
    if not text or text.isspace():
        return False
    if _may_link(text) and (URL.search(text) or FILE_NAME.search(text)):
        return True
    gate = _gate(text, from_user)
    if gate is None:
        return False
    asks, signals = gate
    whole = _whole(text)
    if whole is not None and not asks and "rule" not in signals:
        return _finds_candidate(whole, [], signals)  # only a rule reads the sentences
    pieces = sentences(text)
    if asks and any(s.endswith("?") for s in pieces):
        return True
    if whole is not None:
        return _finds_candidate(whole, pieces, signals)
    return any(_finds_candidate(sentence, [sentence]) for sentence in pieces)


def _may_link(text: str) -> bool:
    return "://" in text or ("." in text and FILE_EXTENSION.search(text) is not None)


def _gate(text: str, from_user: bool) -> tuple[bool, frozenset[str]] | None:
    """Whether the user asks, and the line's signals; None for a line with neither, nor a label."""
    asks = from_user and "?" in text
    # Most chat lines carry no signal at all: no sentence splitting, no expressions for them.
    signals = _signals(text.lower())
    if not asks and not signals and ":" not in text:
        return None
    return asks, signals


def _whole(text: str) -> str | None:
    """The message as one entry, whitespace collapsed; None when it is read by sentences."""
    collapsed = " ".join(text.split())
    return clip(collapsed, ENTRY_MAX_CHARS) if len(collapsed) <= WHOLE_MESSAGE_CHARS else None


def _finds_candidate(text: str, pieces: list[str], signals: frozenset[str] | None = None) -> bool:
    """`_candidate(text, pieces, signals) is not None`, deciding no more than that needs."""
    label, _body = split_label(text)
    lowered = text.lower()
    if signals is None:
        signals = _signals(lowered)
    if not signals and label is None:
        return False
    if label or _kind(text, lowered, pieces, signals) is not None:
        return True
    if "keep" in signals and any(marker in lowered for marker in KEEP_MARKERS):
        return True
    return "value" in signals and has_value(text)


def _signals(lowered: str) -> frozenset[str]:
    """Which kinds of signal a lowered line holds: set tests, then phrases only where a trigger
    word is present; no expression runs unless a digit or a dot could start a value."""
    words = set(lowered.translate(_WORD_SEPARATORS).split())
    # One intersection in C finds every gate and trigger word; most lines hold none.
    hits = _SIGNAL_WORDS.intersection(words)
    found = {name for word in hits for name in _GATES_OF.get(word, ())}
    if "@" in lowered or "i'll" in words:
        found.add("owner")
    flat: str | None = None
    for name, phrases in dict.fromkeys(p for word in hits for p in _PHRASES_OF.get(word, ())):
        if name in found:
            continue
        if flat is None:
            flat = " ".join(lowered.split())  # a phrase may span a line break
        if any(map(flat.__contains__, phrases)):
            found.add(name)
    if "action" in found and "owner" not in found:
        found.discard("action")  # _kind() needs an owner for an action; nothing else reads it
    found.discard("owner")
    if (
        has_digit(lowered)
        or "$" in lowered
        or (":" in lowered and "://" in lowered)
        or ".example" in lowered
        or (not lowered.isascii() and any(map(lowered.__contains__, CURRENCIES)))
        or ("." in lowered and FILE_EXTENSION.search(lowered))
        # A weekday is a value beside another signal or as what a statement sets ("the deploy
        # day is Tuesday"); alone in chatter ("see you thursday") it is not.
        or (not _WEEKDAYS.isdisjoint(words) and (found or _weekday_statement(lowered)))
    ):
        found.add("value")
    return frozenset(found)


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


def _candidate(
    text: str, pieces: list[str], signals: frozenset[str] | None = None
) -> Candidate | None:
    label, body = split_label(text)
    lowered = text.lower()
    if signals is None:
        signals = _signals(lowered)
    if not signals and label is None:
        return None  # no keyword, no value, no label: chatter
    labelled = label_kind(label) if label else None
    kind = labelled or _kind(text, lowered, pieces, signals)
    value = value_weight(text) if "value" in signals else 0
    keep = "keep" in signals and any(marker in lowered for marker in KEEP_MARKERS)
    if kind is None:
        if not (value or keep or label):
            return None  # as _finds_candidate() decides
        kind = "fact"
    weight = value + (2 if keep else 0) + (2 if label else 0)
    if kind == "preference" and not _STRONG_PREFERENCE.search(text):
        weight -= 2
    subject, first_person = subject_of(body) if kind != "action" else (None, False)
    due_match = _DUE.search(text) if kind == "action" else None
    owner_hint = named = None
    self_owned = False
    if kind == "action":
        mention = MENTION.search(text)
        vocative = _VOCATIVE.match(body)
        owner_hint = mention.group(1) if mention else (vocative.group(1) if vocative else None)
        named_match = _NAMED_OWNER.search(text)
        named = named_match.group(1) if named_match else None
        self_owned = bool(_SELF_OWNER.search(text)) or labelled == "action"
    return Candidate(
        kind=kind,
        text=text,
        subject=subject,
        weight=weight,
        first_person=first_person,
        owner_hint=owner_hint,
        named_owner=named,
        self_owned=self_owned,
        due=due_match.group(1) if due_match else None,
    )


def _kind(
    text: str, lowered: str, pieces: list[str], signals: frozenset[str]
) -> FeatureKind | None:
    if "decision" in signals and _DECISION.search(lowered):
        return "decision"
    if "preference" in signals and _STRONG_PREFERENCE.search(lowered):
        return "preference"
    if "rule" in signals and any(
        _RULE.search(_strip_opening(piece)) for piece in pieces if len(piece.split()) >= 4
    ):
        return "rule"
    if "action" not in signals:
        return None
    owned = "@" in lowered or _VOCATIVE.match(text) or _SELF_OWNER.search(lowered)
    if owned and ACTION.search(lowered):
        return "action"
    return None


def _strip_opening(text: str) -> str:
    label, body = split_label(text)
    return body if label else text

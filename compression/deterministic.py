"""The summary written without an LLM (SPEC 6.6): extractive, same headings, bounded, repeatable."""

from __future__ import annotations

import datetime as dt
import itertools
import re
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.compression import template as t
from compactbot.compression.extract import members_words, read_turn
from compactbot.compression.features import action_owner, message_features
from compactbot.compression.line_subjects import subject_of
from compactbot.compression.redact import redact
from compactbot.compression.salient import clip, norm_key, sentences
from compactbot.compression.summarizer import SummaryRequest
from compactbot.compression.tool_targets import tool_references, tool_target
from compactbot.compression.transcript import (
    content_text,
    split_speaker,
    tool_call_parts,
    turn_date,
)

# SPEC 6.9: at most 8,000 characters between the prefix and the end marker.
MAX_SUMMARY_CHARS = 8_000
LATEST_ASK_MAX_CHARS = 1_400
ENTRY_MAX_CHARS = 400
# Newest entries kept per section before the size bound; keeps the work linear in the input.
KEEP_PER_SECTION = 40
NEWEST_KEPT_PER_SECTION = 3
RECENT_REQUESTS = 5
OPEN_QUESTIONS = 5
UNAVAILABLE_NOTE = (
    "Note: automatic summary was unavailable; this summary was extracted without an LLM from "
    "{count} compacted messages. Entries quote the chat; verify current state before acting."
)
EXTRACTED_NOTE = (
    "Note: extracted without an LLM from {count} compacted messages; entries quote the chat."
)
HISTORICAL_SUFFIX = " (historical: newer messages after this summary win)"
EARLIER_ASK = "Earlier ask: "

# Higher survives the size bound longer; pins are never dropped.
_SALIENCE = {
    t.HEADING_LATEST_ASK: 9,
    # Stated preferences are frequent in chat; exact values are what summaries lose first.
    t.HEADING_PARTICIPANTS: 6,
    t.HEADING_RULES: 7,
    t.HEADING_DECISIONS: 6,
    t.HEADING_ACTION_ITEMS: 6,
    t.HEADING_KEY_FACTS: 6,
    t.HEADING_RESOLVED: 4,
    t.HEADING_LINKS: 4,
    t.HEADING_TOOL_WORK: 3,
    t.HEADING_TOPICS: 2,
    t.HEADING_OPEN_QUESTIONS: 1,
}
_CATEGORY_HEADING = {
    "decision": t.HEADING_DECISIONS,
    "preference": t.HEADING_PARTICIPANTS,
    "rule": t.HEADING_RULES,
    "action": t.HEADING_ACTION_ITEMS,
    "fact": t.HEADING_KEY_FACTS,
}
# Sections where "<subject> is <value>" entries replace older ones for the same subject.
_REPLACEABLE = frozenset({t.HEADING_DECISIONS, t.HEADING_RULES, t.HEADING_KEY_FACTS})
_HEADING_WORDS = (
    ("participant", t.HEADING_PARTICIPANTS),
    ("ask", t.HEADING_LATEST_ASK),
    ("topic", t.HEADING_TOPICS),
    ("decision", t.HEADING_DECISIONS),
    ("action", t.HEADING_ACTION_ITEMS),
    ("rule", t.HEADING_RULES),
    ("constraint", t.HEADING_RULES),
    ("resolved", t.HEADING_RESOLVED),
    ("open", t.HEADING_OPEN_QUESTIONS),
    ("link", t.HEADING_LINKS),
    ("tool", t.HEADING_TOOL_WORK),
)
SEEN_PREFIX = "Seen in these turns: "
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_ERROR = re.compile(r"\b(?:error|failed|failure|exception|traceback|timed? ?out|fatal)\b", re.I)


@dataclass(frozen=True, slots=True)
class _Entry:
    heading: str
    text: str
    seq: int
    salience: int


@dataclass(frozen=True, slots=True)
class _Ask:
    index: int
    tag: str
    text: str


def deterministic_summary(request: SummaryRequest, *, unavailable: bool) -> str:
    """The summary body (no prefix or end marker), at most 8,000 chars unless the pins need more."""
    turns = request.turns
    speakers = [name for name in (_speaker(turn) for turn in turns) if name]
    names = list(dict.fromkeys([*request.participants, *speakers]))
    ask = _latest_ask(turns)
    seq = itertools.count()
    entries = _previous_entries(request.previous_summary, seq, moving_ask=ask is not None)
    # One participants line for the whole history, not one more per compaction.
    seen = [e for e in entries if e.text.startswith(SEEN_PREFIX)]
    earlier = [n.strip() for e in seen for n in e.text.removeprefix(SEEN_PREFIX).split(",")]
    entries = [e for e in entries if not e.text.startswith(SEEN_PREFIX)]
    everyone = list(dict.fromkeys(n for n in [*earlier, *names] if n and not n.endswith("…")))
    if everyone:
        line = clip(SEEN_PREFIX + ", ".join(everyone), ENTRY_MAX_CHARS)
        # Who is in the chat outlives any single entry.
        entries.append(_entry(t.HEADING_PARTICIPANTS, line, seq, penalty=-4))
    entries += _turn_entries(turns, frozenset(names), ask, request.today, seq)
    if ask is not None:
        text = f"{ask.tag} asked: {clip(ask.text, LATEST_ASK_MAX_CHARS)}{HISTORICAL_SUFFIX}"
        entries.append(_entry(t.HEADING_LATEST_ASK, text, seq))
    pins = t.pin_lines(request.pins)
    entries = _dedupe(_newest_per_subject(entries), {norm_key(line) for line in pins})
    count = sum(1 for turn in turns if turn.get("role") in ("user", "assistant", "tool"))
    note = (UNAVAILABLE_NOTE if unavailable else EXTRACTED_NOTE).format(count=count)
    return _fit(note, entries, pins)


def _entry(heading: str, text: str, seq: Iterator[int], penalty: int = 0) -> _Entry:
    return _Entry(heading, text, next(seq), _SALIENCE[heading] - penalty)


def _speaker(turn: Mapping[str, Any]) -> str | None:
    if turn.get("role") != "user":
        return None
    return split_speaker(content_text(turn.get("content")).lstrip())[0]


def _latest_ask(turns: Sequence[Mapping[str, Any]]) -> _Ask | None:
    for index in range(len(turns) - 1, -1, -1):
        turn = turns[index]
        if turn.get("role") != "user":
            continue
        text, speaker = read_turn(turn)
        text = " ".join(redact(text).split())
        if text and members_words(turn, text):
            return _Ask(index, _tag(speaker or "user", turn_date(turn)), text)
    return None


def _tag(speaker: str, date: str | None) -> str:
    return f"[{speaker}, {date}]" if date else f"[{speaker}]"


def _previous_entries(
    previous: str | None, seq: Iterator[int], *, moving_ask: bool
) -> list[_Entry]:
    """The previous summary's entries, oldest first; its latest ask becomes an earlier ask."""
    if not previous:
        return []
    body = t.summary_body(previous) if t.is_summary_text(previous) else previous
    entries: list[_Entry] = []
    heading: str | None = None
    for raw in body.splitlines():
        line = raw.strip()
        if line.startswith("## "):
            heading = _known_heading(line)
            continue
        item = _BULLET.sub("", line).strip()
        if heading is None or not item:
            continue
        target = heading
        if heading == t.HEADING_LATEST_ASK and moving_ask:
            target = t.HEADING_TOPICS
            item = EARLIER_ASK + item.removeprefix(EARLIER_ASK).removesuffix(HISTORICAL_SUFFIX)
        entries.append(_entry(target, clip(redact(item), ENTRY_MAX_CHARS), seq))
    return entries


def _known_heading(line: str) -> str:
    """Our heading for a previous summary's heading; unknown ones hold facts."""
    lowered = line.lower()
    for heading in t.SECTION_HEADINGS:
        if lowered == heading.lower():
            # Pins come from the request; a previous pin line is kept as a fact.
            return t.HEADING_KEY_FACTS if heading == t.HEADING_PINS else heading
    for word, heading in _HEADING_WORDS:
        if word in lowered:
            return heading
    return t.HEADING_KEY_FACTS


def _turn_entries(
    turns: Sequence[Mapping[str, Any]],
    names: frozenset[str],
    ask: _Ask | None,
    today: dt.date,
    seq: Iterator[int],
) -> list[_Entry]:
    sections: dict[str, deque[_Entry]] = {
        heading: deque(maxlen=KEEP_PER_SECTION) for heading in t.SECTION_HEADINGS
    }
    links: dict[str, _Entry] = {}
    tools: dict[tuple[str, str], tuple[str | None, str]] = {}
    failed_calls: set[str] = set()
    for index, turn in enumerate(turns):
        role = turn.get("role")
        date = turn_date(turn)
        if role == "tool":
            if _ERROR.search(content_text(turn.get("content"))[:300]):
                failed_calls.add(str(turn.get("tool_call_id")))
            continue
        if role not in ("user", "assistant"):
            continue
        text, name = read_turn(turn)
        # The bot's own replies and commands are not what the chat said (SPEC 6.6).
        members = members_words(turn, text)
        text = redact(text) if members else ""
        speaker = name or "user"
        tag = _tag(speaker, date)
        for sentence in sentences(text):
            features = message_features(sentence, True)
            for link in features.links:
                links.pop(link, None)
                links[link] = _entry(t.HEADING_LINKS, f"{link} (shared by {speaker})", seq)
            for found in features.candidates:
                line = f"{tag} {sentence}"
                if found.kind == "action":
                    owner = action_owner(found, speaker, sorted(names))
                    line = f"owner {owner}, open as of {today.isoformat()}: {line}"
                heading = _CATEGORY_HEADING[found.kind]
                sections[heading].append(_entry(heading, line, seq))
            if features.questions and (ask is None or index != ask.index):
                sections[t.HEADING_OPEN_QUESTIONS].append(
                    _entry(t.HEADING_OPEN_QUESTIONS, f"{tag} {sentence}", seq)
                )
        if members and (ask is None or index < ask.index):
            request = clip(" ".join(text.split()), 200)
            if request:
                sections[t.HEADING_TOPICS].append(_entry(t.HEADING_TOPICS, f"{tag} {request}", seq))
        for call in turn.get("tool_calls") or ():
            call_id = str(call.get("id")) if isinstance(call, Mapping) else ""
            tool_name, arguments = tool_call_parts(call)
            key = (tool_name or "tool", tool_target(arguments))
            for reference in map(redact, tool_references(arguments)):
                links.pop(reference, None)
                line = f"{reference} (in a {key[0]} call)"
                links[reference] = _entry(t.HEADING_LINKS, line, seq)
            tools.pop(key, None)
            tools[key] = (date, call_id)
    for (tool_name, target), (when_known, call_id) in tools.items():
        when = f"on {when_known}" if when_known else f"before {today.isoformat()}"
        outcome = "failed" if call_id in failed_calls else "done"
        line = f"Called {tool_name}({target}) — {outcome} {when}"
        sections[t.HEADING_TOOL_WORK].append(_entry(t.HEADING_TOOL_WORK, line, seq))
    for entry in list(links.values())[-KEEP_PER_SECTION:]:
        sections[t.HEADING_LINKS].append(entry)
    recent = sections[t.HEADING_TOPICS]
    sections[t.HEADING_TOPICS] = deque(list(recent)[-RECENT_REQUESTS:])
    questions = sections[t.HEADING_OPEN_QUESTIONS]
    sections[t.HEADING_OPEN_QUESTIONS] = deque(list(questions)[-OPEN_QUESTIONS:])
    return [entry for section in sections.values() for entry in section]


def _newest_per_subject(entries: list[_Entry]) -> list[_Entry]:
    """Drop an older "<subject> is <value>" entry when a newer one names the same subject."""
    seen: set[str] = set()
    kept: list[_Entry] = []
    for entry in sorted(entries, key=lambda e: e.seq, reverse=True):
        subject = subject_of(entry.text)[0] if entry.heading in _REPLACEABLE else None
        if subject is not None:
            if subject in seen:
                continue
            seen.add(subject)
        kept.append(entry)
    return kept


def _dedupe(entries: list[_Entry], taken: set[str]) -> list[_Entry]:
    """One entry per wording: the most salient, then the newest, wins."""
    kept: list[_Entry] = []
    for entry in sorted(entries, key=lambda e: (-e.salience, -e.seq)):
        key = norm_key(entry.text)
        if key and key not in taken:
            taken.add(key)
            kept.append(entry)
    return kept


def _fit(note: str, entries: list[_Entry], pins: list[str]) -> str:
    """Render within MAX_SUMMARY_CHARS, dropping the least salient, oldest entries first."""
    # Each section's newest few go last, so a busy section cannot wipe out the quiet ones.
    counts: dict[str, int] = {}
    protected: set[int] = set()
    for entry in sorted(entries, key=lambda e: -e.seq):
        counts[entry.heading] = counts.get(entry.heading, 0) + 1
        if counts[entry.heading] <= NEWEST_KEPT_PER_SECTION:
            protected.add(entry.seq)
    order = sorted(entries, key=lambda e: (e.seq in protected, e.salience, e.seq))
    dropped: set[int] = set()
    text = _render(note, entries, pins)
    position = 0
    # Only the pins (never dropped) can keep the text over the bound once every entry is gone.
    while len(text) > MAX_SUMMARY_CHARS and position < len(order):
        excess = len(text) - MAX_SUMMARY_CHARS
        while excess > 0 and position < len(order):
            dropped.add(order[position].seq)
            excess -= len(order[position].text) + 3
            position += 1
        text = _render(note, [e for e in entries if e.seq not in dropped], pins)
    return text


def _render(note: str, entries: list[_Entry], pins: list[str]) -> str:
    by_heading: dict[str, list[_Entry]] = {}
    for entry in sorted(entries, key=lambda e: e.seq):
        by_heading.setdefault(entry.heading, []).append(entry)
    lines = [note]
    for heading in t.SECTION_HEADINGS:
        items = (
            pins
            if heading == t.HEADING_PINS
            else [f"- {e.text}" for e in by_heading.get(heading, [])]
        )
        if items:
            lines += ["", heading, *items]
    return "\n".join(lines)

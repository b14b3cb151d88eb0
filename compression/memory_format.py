"""The line format a summarizer writes memory entries in, and its lenient parser (SPEC 6.11).

One entry per line, fields separated by " | ":

    KIND | subject | speaker | text [| owner=NAME] [| due=DATE]
    ANSWER | #ID | speaker | the answer          (resolves open question ID)
    DONE | #ID | speaker | DATE                  (closes action item ID)

KIND is RULE, DECISION, FACT, PREFERENCE, ACTION, QUESTION, LINK, TOOL, NOTE or PARTICIPANT.
`subject` is what a value is about ("deploy day") or "-"; "#ID" replaces that entry. A new value
for the subject of a current entry replaces it. Markdown sections ("## Decisions" then "- …")
and "KIND: text" lines are accepted too; any other line is kept as a narrative note.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from compactbot.compression.line_subjects import subject_of
from compactbot.compression.memory import EntryKind, Memory, MemoryEntry, MemoryUpdate, Resolution
from compactbot.compression.memory_render import tier_of
from compactbot.compression.salient import clip
from compactbot.compression.template import HEADING_PINS
from compactbot.compression.transcript import content_text, split_speaker

ENTRY_MAX_CHARS = 600
SOURCES_PER_ENTRY = 3
_KINDS: dict[str, EntryKind] = {
    **dict.fromkeys(("rule", "rules", "constraint", "constraints"), "rule"),
    **dict.fromkeys(("decision", "decisions", "decided"), "decision"),
    **dict.fromkeys(("fact", "facts", "value", "values", "key fact"), "fact"),
    **dict.fromkeys(("preference", "preferences", "pref"), "preference"),
    **dict.fromkeys(("action", "actions", "action item", "todo", "task"), "action"),
    **dict.fromkeys(("question", "open question", "questions"), "question"),
    **dict.fromkeys(("link", "links", "file", "files", "url"), "link"),
    **dict.fromkeys(("tool", "tool work", "tools"), "tool"),
    **dict.fromkeys(("note", "notes", "narrative", "topic", "topics"), "narrative"),
    **dict.fromkeys(("participant", "participants", "person", "member"), "participant"),
}
_RESOLVING = frozenset({"answer", "answered", "resolved", "done", "finished", "closed"})
# Words in a markdown heading and the kind of the bullets under it.
_HEADING_KINDS: tuple[tuple[str, EntryKind], ...] = (
    ("participant", "participant"),
    ("decision", "decision"),
    ("action", "action"),
    ("rule", "rule"),
    ("constraint", "rule"),
    ("fact", "fact"),
    ("value", "fact"),
    ("resolved", "narrative"),
    ("question", "question"),
    ("link", "link"),
    ("file", "link"),
    ("tool", "tool"),
    ("ask", "narrative"),
    ("topic", "narrative"),
)
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")
_KIND_COLON = re.compile(r"^(?P<kind>[A-Za-z][A-Za-z ]{1,20}?)\s*:\s+(?P<text>\S.*)$")
_TAG = re.compile(r"^\[(?P<speaker>[^\],\]]{1,60})(?:,\s*(?P<date>[^\]]{1,30}))?\]\s+(?P<text>.+)$")
_ID = re.compile(r"^#?(\d{1,9})$")
_WORD = re.compile(r"[\w$€£.-]{5,}")
_COMMA = re.compile(r",\s*")
_EXTRA = re.compile(r"^(owner|due)\s*=")


@dataclass(slots=True)
class _Parsed:
    additions: list[MemoryEntry] = field(default_factory=list)
    resolutions: list[Resolution] = field(default_factory=list)
    supersedes: dict[int, int] = field(default_factory=dict)


def format_current(memory: Memory, *, max_chars: int) -> str | None:
    """The current entries as the summarizer sees them: "#ID KIND | subject | speaker | text"."""
    lines: list[tuple[int, str]] = []
    used = 0
    for entry in sorted(memory.current(), key=lambda e: (tier_of(e), -e.id)):
        line = format_entry(entry)
        if used + len(line) + 1 > max_chars:
            continue
        used += len(line) + 1
        lines.append((entry.id, line))
    return "\n".join(line for _, line in sorted(lines)) or None


def format_entry(entry: MemoryEntry) -> str:
    kind = "NOTE" if entry.kind in ("narrative", "topic") else entry.kind.upper()
    status = f" ({entry.status})" if entry.status != "current" else ""
    fields = [f"#{entry.id} {kind}{status}", entry.subject or "-", entry.speaker or "-", entry.text]
    if entry.owner:
        fields.append(f"owner={entry.owner}")
    if entry.due:
        fields.append(f"due={entry.due}")
    return " | ".join(fields)


def parse_reply(
    text: str, turns: Sequence[Mapping[str, Any]], ids: Sequence[str | None], today: dt.date
) -> MemoryUpdate | None:
    """What a summarizer's reply adds; None when no line of it is usable."""
    parsed = _Parsed()
    # A line without fields adds the same entries wherever it repeats, and the memory keeps
    # one of each: replies repeat lines, and a repeat is skipped before it is even parsed.
    seen: set[tuple[str, EntryKind]] = set()
    heading_kind: EntryKind = "narrative"
    in_pins = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("```", "<", "---")):
            continue
        if line.startswith("#") and not _ID.match(line.split(" ", 1)[0]):
            heading_kind, in_pins = _heading(line)
            continue
        if in_pins:
            continue  # pins are rendered from the request, verbatim, by code
        if " | " not in line:
            if (line, heading_kind) in seen:
                continue
            seen.add((line, heading_kind))
        item = _BULLET.sub("", line).strip()
        if item:
            _parse_line(item, heading_kind, parsed, today)
    if not parsed.additions and not parsed.resolutions:
        return None
    index = _SourceIndex(turns, ids)
    additions = tuple(
        entry if entry.sources else _with_sources(entry, index) for entry in parsed.additions
    )
    return MemoryUpdate(additions, tuple(parsed.resolutions), parsed.supersedes or None)


def _heading(line: str) -> tuple[EntryKind, bool]:
    lowered = line.lstrip("#").strip().lower()
    if lowered == HEADING_PINS.lstrip("#").strip().lower():
        return "narrative", True
    for word, kind in _HEADING_KINDS:
        if word in lowered:
            return kind, False
    return "narrative", False


def _parse_line(item: str, default: EntryKind, parsed: _Parsed, today: dt.date) -> None:
    fields = [f.strip() for f in item.split(" | ")] if " | " in item else []
    head = (fields[0] if fields else "").lower().lstrip("#0123456789 ").split(" (")[0]
    if fields and head in _RESOLVING and len(fields) >= 2:
        target = _ID.match(fields[1])
        if target:
            answer = fields[-1] if len(fields) >= 3 else None
            parsed.resolutions.append(Resolution(int(target[1]), answer, today.isoformat()))
            return
    if fields and head in _KINDS and len(fields) >= 2:
        _structured(_KINDS[head], fields[1:], parsed)
        return
    colon = _KIND_COLON.match(item)
    if colon and colon["kind"].lower() in _KINDS and colon["kind"].split()[0].isupper():
        _add(parsed, _KINDS[colon["kind"].lower()], colon["text"], None, None, None, {})
        return
    kind = default
    if kind == "participant":
        names = [n.strip() for n in _COMMA.split(item.split(":", 1)[-1]) if n.strip()]
        if all(len(name.split()) <= 3 for name in names):
            for name in names:
                parsed.additions.append(MemoryEntry(0, "participant", name[:60], speaker=name[:60]))
            return
        kind = "preference"
    tagged = _TAG.match(item)
    speaker = date = None
    if tagged:
        speaker, date, item = tagged["speaker"].strip(), tagged["date"], tagged["text"]
    else:
        name, rest = split_speaker(item)
        if name:
            speaker, item = name, rest
    _add(parsed, kind, item, None, speaker, date, {})


def _structured(kind: EntryKind, rest: list[str], parsed: _Parsed) -> None:
    extras = {
        k.strip().lower(): v.strip()
        for k, _, v in (f.partition("=") for f in rest if _EXTRA.match(f))
    }
    rest = [f for f in rest if not _EXTRA.match(f)]
    if len(rest) >= 3:
        subject, speaker, text = rest[0], rest[1], " | ".join(rest[2:])
    elif len(rest) == 2:
        subject, speaker, text = rest[0], None, rest[1]
    else:
        subject, speaker, text = None, None, rest[0] if rest else ""
    _add(parsed, kind, text, subject, speaker, None, extras)


def _add(
    parsed: _Parsed,
    kind: EntryKind,
    text: str,
    subject: str | None,
    speaker: str | None,
    date: str | None,
    extras: dict[str, str],
) -> None:
    text = clip(" ".join(text.split()), ENTRY_MAX_CHARS)
    if not text:
        return
    speaker = None if speaker in (None, "", "-") else speaker
    replaces = _ID.match(subject) if subject else None
    if replaces:
        parsed.supersedes[len(parsed.additions)] = int(replaces[1])
        subject = None
    if subject in (None, "", "-"):
        derived, first_person = subject_of(text)
        subject = f"{speaker}'s {derived}" if derived and first_person and speaker else derived
    if kind == "participant":
        parsed.additions.append(MemoryEntry(0, "participant", text[:60], speaker=text[:60]))
        return
    parsed.additions.append(
        MemoryEntry(
            0,
            kind,
            text,
            subject=subject,
            speaker=speaker,
            date=date,
            owner=extras.get("owner"),
            due=extras.get("due"),
        )
    )


class _SourceIndex:
    """Which turns an entry came from: those of its speaker sharing its rarest long word."""

    def __init__(self, turns: Sequence[Mapping[str, Any]], ids: Sequence[str | None]) -> None:
        self._turns = turns
        self._ids = ids
        self._texts: list[tuple[str, str]] | None = None  # read on the first entry without sources
        self._found: dict[tuple[str, ...], tuple[str, ...]] = {}  # a reply repeats its words
        self._by_text: dict[str, tuple[str, ...]] = {}  # and its lines

    @property
    def texts(self) -> list[tuple[str, str]]:
        if self._texts is None:
            pairs = zip(self._turns, self._ids, strict=True)
            self._texts = [(content_text(t.get("content")), i) for t, i in pairs if i]
        return self._texts

    def find(self, entry: MemoryEntry) -> tuple[str, ...]:
        known = self._by_text.get(entry.text)
        if known is not None:
            return known
        if not self.texts:
            return ()
        words = source_words(entry.text)
        if not words:
            return ()
        known = self._found.get(words)
        if known is not None:
            self._by_text[entry.text] = known
            return known
        found: list[str] = []
        for text, i in self.texts:
            if all(w in text for w in words):
                found.append(i)
                if len(found) == SOURCES_PER_ENTRY:
                    break
        self._found[words] = self._by_text[entry.text] = result = tuple(found)
        return result


def source_words(text: str) -> tuple[str, ...]:
    """The two longest words of an entry's text (ties by the words themselves, so the choice
    never depends on hashing): a turn holding both is its source."""
    return tuple(sorted(set(_WORD.findall(text)), key=lambda word: (-len(word), word))[:2])


def _with_sources(entry: MemoryEntry, index: _SourceIndex) -> MemoryEntry:
    sources = index.find(entry)
    return replace(entry, sources=sources) if sources else entry

"""The durable memory of a session (SPEC 6.11): typed entries folded in, never regenerated.

Each compaction produces a `MemoryUpdate` (from the summarizer's reply or the extractor) and
`apply_update` folds it in. Entries the update does not mention are carried as they are; a newer
value for a subject supersedes the older entry, which stays in the memory marked superseded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Literal, get_args

_NOT_ALNUM = re.compile(r"[\W_]+")

EntryKind = Literal[
    "participant",
    "rule",
    "decision",
    "fact",
    "preference",
    "action",
    "question",
    "link",
    "tool",
    "topic",
    "narrative",
]
ENTRY_KINDS: tuple[EntryKind, ...] = get_args(EntryKind)
# current: shown; superseded: kept in the store, never shown as current; resolved / done:
# a question that got its answer, an action item that was finished.
EntryStatus = Literal["current", "superseded", "resolved", "done"]
ENTRY_STATUSES: tuple[EntryStatus, ...] = get_args(EntryStatus)
EntryOrigin = Literal["summarizer", "extractor"]
ENTRY_ORIGINS: tuple[EntryOrigin, ...] = get_args(EntryOrigin)
# Kinds whose entries carry one value of a subject, so a newer value replaces the older one.
VALUE_KINDS: frozenset[EntryKind] = frozenset({"rule", "decision", "fact", "preference", "topic"})


@dataclass(frozen=True, slots=True)
class MemoryEntry:
    """One remembered item; `sources` are the ids of the messages it came from."""

    id: int
    kind: EntryKind
    text: str
    subject: str | None = None
    speaker: str | None = None
    date: str | None = None
    sources: tuple[str, ...] = ()
    status: EntryStatus = "current"
    owner: str | None = None
    due: str | None = None
    answer: str | None = None
    closed_on: str | None = None  # when a question was resolved or an action item done
    superseded_by: int | None = None
    # Who wrote it: the summarizer, or the deterministic extractor (offline, fallback, backup).
    origin: EntryOrigin = "summarizer"
    # The platform user ids of the members whose messages it came from (SPEC 16): two members
    # showing the same name are told apart by these, not by `speaker`.
    author_ids: tuple[str, ...] = ()

    @property
    def shown(self) -> bool:
        return self.status != "superseded"


@dataclass(frozen=True, slots=True)
class MessageSource:
    """Where a message passed to `compress` is stored: its id, when it was sent and, for a
    member's message, its author's platform user id and the name shown at the time."""

    id: str
    at: float | None = None
    author_id: str | None = None
    author: str | None = None
    # Whether its author may set the chat's rules (an admin, SPEC 16): a rule that only such
    # members did not state is kept as their request.
    may_set_rules: bool = True


@dataclass(frozen=True, slots=True)
class Resolution:
    """A question answered or an action item done; `target` is the entry id."""

    target: int
    answer: str | None = None
    date: str | None = None


@dataclass(frozen=True, slots=True)
class MemoryUpdate:
    """What one span adds: new entries (id 0, or `supersedes` naming an entry) and resolutions."""

    additions: tuple[MemoryEntry, ...] = ()
    resolutions: tuple[Resolution, ...] = ()
    supersedes: Mapping[int, int] | None = None  # index in `additions` -> entry id it replaces

    @property
    def empty(self) -> bool:
        return not self.additions and not self.resolutions


@dataclass(frozen=True, slots=True)
class Memory:
    """All entries in the order they were learnt, and the spans still to be re-read.

    `reread` holds the ids of messages that only the deterministic extractor has read (a
    transient failure under `urgent`); the next successful LLM compaction reads them again.
    """

    entries: tuple[MemoryEntry, ...] = ()
    reread: tuple[str, ...] = ()

    def current(self) -> list[MemoryEntry]:
        return [entry for entry in self.entries if entry.shown]

    def counts(self) -> dict[str, int]:
        """Shown entries per kind, in `ENTRY_KINDS` order, kinds with none left out."""
        found: dict[EntryKind, int] = {}
        for entry in self.entries:
            if entry.shown:
                found[entry.kind] = found.get(entry.kind, 0) + 1
        return {kind: found[kind] for kind in ENTRY_KINDS if kind in found}

    @property
    def next_id(self) -> int:
        return max((entry.id for entry in self.entries), default=0) + 1

    def with_reread(self, ids: Iterable[str]) -> Memory:
        return replace(self, reread=tuple(dict.fromkeys([*self.reread, *ids])))


def norm_text(text: str) -> str:
    """Letters and digits only, lowercased: two wordings that differ in spacing are one entry."""
    return _NOT_ALNUM.sub("", text.lower())


def norm_subject(subject: str | None) -> str | None:
    if not subject:
        return None
    words = " ".join(subject.lower().replace("*", " ").replace("`", " ").split())
    return words or None


def _subject_key(entry: MemoryEntry) -> tuple[str, str] | None:
    """What a newer value replaces: its subject, and for a member's own subject ("Alice's
    timezone") its author, so one who only shows the same name cannot replace it (SPEC 16)."""
    subject = norm_subject(entry.subject) if entry.kind in VALUE_KINDS else None
    if subject is None:
        return None
    speaker = " ".join((entry.speaker or "").lower().split())
    personal = bool(speaker) and subject.startswith(f"{speaker}'s ")
    return subject, entry.author_ids[0] if personal and entry.author_ids else ""


def apply_update(memory: Memory, update: MemoryUpdate) -> Memory:
    """`memory` with `update` folded in; untouched entries are the very same objects."""
    if update.empty:
        return memory
    entries = list(memory.entries)
    index_of = {entry.id: i for i, entry in enumerate(entries)}
    # Superseded wordings count too: a quote of an old value must not bring it back as current.
    # A repeat is one entry with all its sources.
    seen_text = {(e.kind, norm_text(e.text)): e.id for e in entries}
    by_subject = {key: e.id for e in entries if e.shown and (key := _subject_key(e)) is not None}
    names = {e.text.lower() for e in entries if e.kind == "participant"}
    next_id = memory.next_id
    explicit = update.supersedes or {}
    for position, addition in enumerate(update.additions):
        key = (addition.kind, norm_text(addition.text))
        if not key[1]:
            continue
        if key in seen_text:
            _add_sources(entries, index_of[seen_text[key]], addition)
            continue
        if addition.kind == "participant":
            if addition.text.lower() in names:
                continue
            names.add(addition.text.lower())
        entry = replace(addition, id=next_id, status="current", superseded_by=None)
        next_id += 1
        subject = _subject_key(entry)
        old_id = explicit.get(position)
        if old_id is None and subject is not None:
            old_id = by_subject.get(subject)
            if old_id is None and subject[1]:  # a value stored before its author was known
                old_id = by_subject.get((subject[0], ""))
        if old_id is not None and old_id in index_of:
            old = entries[index_of[old_id]]
            if old.shown:
                entries[index_of[old_id]] = replace(
                    old, status="superseded", superseded_by=entry.id
                )
        if subject is not None:
            by_subject[subject] = entry.id
        index_of[entry.id] = len(entries)
        entries.append(entry)
        seen_text[key] = entry.id
    for resolution in update.resolutions:
        found = index_of.get(resolution.target)
        if found is None:
            continue
        target = entries[found]
        position = found
        if target.kind == "question" and target.status == "current":
            entries[position] = replace(
                target, status="resolved", answer=resolution.answer, closed_on=resolution.date
            )
        elif target.kind == "action" and target.status == "current":
            entries[position] = replace(target, status="done", closed_on=resolution.date)
    return replace(memory, entries=tuple(entries))


def _add_sources(entries: list[MemoryEntry], position: int, repeat: MemoryEntry) -> None:
    """The entry at `position` with the sources, and their authors, of a repeat of it."""
    known = entries[position]
    if set(repeat.sources) <= set(known.sources) and set(repeat.author_ids) <= set(
        known.author_ids
    ):
        return
    entries[position] = replace(
        known,
        sources=tuple(dict.fromkeys(known.sources + repeat.sources)),
        author_ids=tuple(dict.fromkeys(known.author_ids + repeat.author_ids)),
    )

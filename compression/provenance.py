"""Who said what (SPEC 16): an entry keeps the user ids of its source rows' authors, and its
speaker comes from those rows, never from the summarizer's wording alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from compactbot.compression.memory import MemoryEntry, MemoryUpdate, MessageSource

# Message id -> the source of a member's message that names its author.
Authors = Mapping[str, MessageSource]


def member_authors(
    turns: Sequence[Mapping[str, Any]], sources: Sequence[MessageSource | None]
) -> Authors:
    """The authored sources of the members' turns among `turns` (one source per turn): the
    bot's own rows and tool results are nobody's words."""
    return {
        source.id: source
        for turn, source in zip(turns, sources, strict=True)
        if source is not None and source.author_id and turn.get("role") == "user"
    }


def attribute(update: MemoryUpdate, authors: Authors) -> MemoryUpdate:
    """`update` with each addition's author ids taken from its sources' rows and a speaker
    that none of those rows' authors bears replaced by the first row's author."""
    if not authors:
        return update
    additions = tuple(_attributed(entry, authors) for entry in update.additions)
    return replace(update, additions=additions)


def _attributed(entry: MemoryEntry, authors: Authors) -> MemoryEntry:
    # A participant entry names a person; it is not something that person said.
    if entry.kind == "participant":
        return entry
    rows = [authors[source] for source in entry.sources if source in authors]
    if not rows:
        return entry
    found = (row.author_id for row in rows if row.author_id)
    ids = tuple(dict.fromkeys([*entry.author_ids, *found]))
    names = [row.author for row in rows if row.author]
    if not names or _among(entry.speaker, names):
        return replace(entry, author_ids=ids)
    speaker = names[0]
    return replace(entry, author_ids=ids, speaker=speaker, subject=_owned(entry, speaker))


def _owned(entry: MemoryEntry, speaker: str) -> str | None:
    """The entry's subject, "Alice's timezone" made the real speaker's: a member's own value
    replaces that member's older one, never the value of whom the summarizer named."""
    wrong = f"{entry.speaker}'s "
    if entry.speaker and entry.subject and entry.subject.startswith(wrong):
        return f"{speaker}'s {entry.subject[len(wrong) :]}"
    return entry.subject


def _among(speaker: str | None, names: Sequence[str]) -> bool:
    if not speaker:
        return False
    wanted = " ".join(speaker.split()).casefold()
    return any(" ".join(name.split()).casefold() == wanted for name in names)

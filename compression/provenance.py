"""Who said what (SPEC 16): an entry keeps the user ids of its source rows' authors, and its
speaker comes from those rows, never from the summarizer's wording alone."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from compactbot.compression.memory import MemoryEntry, MemoryUpdate, MessageSource

# How a member's rule reads once it is kept as that member's request.
REQUEST_PREFIX = "asked that: "
# How a summary line names the bot, whose turns carry no speaker in the summarizer's input.
BOT_SPEAKERS = frozenset({"assistant", "bot", "the bot", "compactbot"})
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
    if names and not _among(entry.speaker, names) and not _bot_among_sources(entry, authors):
        speaker = names[0]
        entry = replace(entry, speaker=speaker, subject=_owned(entry, speaker))
    entry = replace(entry, author_ids=ids)
    if entry.kind == "rule" and not any(row.may_set_rules for row in rows):
        return _request(entry)
    return entry


def _bot_among_sources(entry: MemoryEntry, authors: Authors) -> bool:
    """Whether the entry names the bot as its speaker and cites a row no member wrote."""
    speaker = " ".join((entry.speaker or "").split()).casefold()
    return speaker in BOT_SPEAKERS and any(source not in authors for source in entry.sources)


def _request(rule: MemoryEntry) -> MemoryEntry:
    """A rule a member without the right to set rules stated: that member's request, shown
    among the participants' preferences until an admin pins it (SPEC 16)."""
    speaker = rule.speaker or "A member"
    subject = rule.subject or "request"
    if not subject.startswith(f"{speaker}'s "):
        subject = f"{speaker}'s {subject}"
    return replace(rule, kind="preference", text=f"{REQUEST_PREFIX}{rule.text}", subject=subject)


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

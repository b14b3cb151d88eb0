"""A session's memory by kind (SPEC 6.11), a page at a time, and an entry's source messages."""

from __future__ import annotations

from dataclasses import dataclass

from compactbot.bot.operators.console.deps import ConsoleDeps
from compactbot.bot.operators.console.views.chat import chat_or_404, pick_session
from compactbot.bot.operators.console.views.paging import Page
from compactbot.bot.store.base import ChatRecord, SessionRecord, StoredMessage
from compactbot.compression.memory import ENTRY_KINDS, MemoryEntry

ENTRIES_PER_PAGE = 50
MAX_SOURCES_SHOWN = 200


@dataclass(frozen=True, slots=True)
class MemoryPage:
    chat: ChatRecord
    sessions: list[SessionRecord]
    session: SessionRecord | None
    kind: str | None
    show_superseded: bool
    counts: dict[str, int]  # entries per kind, of those the filter shows
    entries: list[MemoryEntry]
    page: Page


async def memory_page(
    deps: ConsoleDeps,
    chat_key: str,
    *,
    session_id: str | None,
    kind: str | None,
    show_superseded: bool,
    page_number: int,
) -> MemoryPage:
    chat = await chat_or_404(deps, chat_key)
    sessions = await deps.services.sessions.list_sessions(chat.key)
    session = pick_session(sessions, session_id)
    kind = kind if kind in ENTRY_KINDS else None
    entries: list[MemoryEntry] = []
    if session is not None:
        memory = await deps.services.transcript.load_memory(session.id)
        entries = [e for e in memory.entries if show_superseded or e.shown]
    counts: dict[str, int] = {k: n for k in ENTRY_KINDS if (n := sum(e.kind == k for e in entries))}
    chosen = [e for e in entries if kind is None or e.kind == kind]
    chosen.reverse()  # newest first, as the summary renders them
    page = Page(page_number, ENTRIES_PER_PAGE, total=len(chosen))
    return MemoryPage(
        chat=chat,
        sessions=sessions,
        session=session,
        kind=kind,
        show_superseded=show_superseded,
        counts=counts,
        entries=chosen[page.start : page.end],
        page=page,
    )


@dataclass(frozen=True, slots=True)
class SourcesPage:
    chat: ChatRecord
    session: SessionRecord
    entry: MemoryEntry
    messages: list[StoredMessage]
    missing: int  # source ids no longer in the store


class EntryNotFound(LookupError):
    pass


async def sources_page(
    deps: ConsoleDeps, chat_key: str, *, session_id: str | None, entry_id: str | None
) -> SourcesPage:
    """The archived (or still live) messages a memory entry was made from."""
    chat = await chat_or_404(deps, chat_key)
    sessions = await deps.services.sessions.list_sessions(chat.key)
    session = pick_session(sessions, session_id)
    if session is None or session.chat_key != chat.key or not _number(entry_id):
        raise EntryNotFound(entry_id)
    memory = await deps.services.transcript.load_memory(session.id)
    entry = next((e for e in memory.entries if str(e.id) == entry_id), None)
    if entry is None:
        raise EntryNotFound(entry_id)
    ids = [int(s) for s in entry.sources[:MAX_SOURCES_SHOWN] if _number(s)]
    messages = await deps.services.transcript.load_messages(session.id, ids)
    return SourcesPage(chat, session, entry, messages, missing=len(entry.sources) - len(messages))


def _number(text: str | None) -> bool:
    return text is not None and text.isascii() and text.isdigit()

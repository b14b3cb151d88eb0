"""A chat's page: its gauge, the summary the model sees, compaction history and pins."""

from __future__ import annotations

from dataclasses import dataclass

from compactbot.bot.compaction.memory_cap import MemoryOverCap, memory_over_cap
from compactbot.bot.operators.console.deps import ConsoleDeps
from compactbot.bot.operators.console.views.gauge import (
    Breaker,
    Gauge,
    breaker_for,
    gauge_for,
    main_session,
)
from compactbot.bot.operators.console.views.paging import Page
from compactbot.bot.store.base import ChatRecord, CompressionEvent, Pin, SessionRecord
from compactbot.compression import Memory

EVENTS_PER_PAGE = 20


class ChatNotFound(LookupError):
    pass


@dataclass(frozen=True, slots=True)
class SummaryRow:
    role: str
    text: str  # exactly the content the model is sent
    tokens: int


@dataclass(frozen=True, slots=True)
class ChatPage:
    chat: ChatRecord
    sessions: list[SessionRecord]
    session: SessionRecord | None
    gauge: Gauge
    breaker: Breaker
    archived_messages: int
    summary: list[SummaryRow]
    events: list[CompressionEvent]
    events_page: Page
    more_events: bool
    pins: list[Pin]
    memory_counts: dict[str, int]
    over_cap: MemoryOverCap | None  # as /status says it (SPEC 6.11)


async def chat_or_404(deps: ConsoleDeps, chat_key: str) -> ChatRecord:
    chat = await deps.services.chats.get_chat(chat_key)
    if chat is None:
        raise ChatNotFound(chat_key)
    return chat


def pick_session(sessions: list[SessionRecord], wanted: str | None) -> SessionRecord | None:
    """The session asked for by `?session=`, else the chat's main open session."""
    if wanted and wanted.isascii() and wanted.isdigit():
        chosen = next((s for s in sessions if s.id == int(wanted)), None)
        if chosen is not None:
            return chosen
    return main_session(sessions)


async def chat_page(
    deps: ConsoleDeps, chat_key: str, *, session_id: str | None, events_page: int
) -> ChatPage:
    services = deps.services
    chat = await chat_or_404(deps, chat_key)
    sessions = await services.sessions.list_sessions(chat.key)
    session = pick_session(sessions, session_id)
    settings = await services.settings_for(chat.key)
    page = Page(events_page, EVENTS_PER_PAGE)
    # The store pages from the newest; one more row than shown says whether another page exists.
    events = await services.compaction_events.list_compression_events(
        chat_key=chat.key, limit=page.end + 1
    )
    summary: list[SummaryRow] = []
    memory = Memory()
    if session is not None:
        summary = [
            SummaryRow(m.role, m.text, m.tokens)
            for m in await services.transcript.load_active(session.id)
            if m.kind == "summary"
        ]
        memory = await services.transcript.load_memory(session.id)
    return ChatPage(
        chat=chat,
        sessions=sessions,
        session=session,
        gauge=gauge_for(
            session,
            window=services.window_for(settings),
            threshold=settings.threshold,
            hygiene_threshold=settings.hygiene_threshold,
            max_tokens=deps.config.model.max_tokens,
        ),
        breaker=breaker_for(session, deps.now()),
        archived_messages=await services.transcript.count_archived(chat.key),
        summary=summary,
        events=events[page.start : page.end],
        events_page=page,
        more_events=len(events) > page.end,
        pins=await services.pins.list_pins(chat.key),
        memory_counts=memory.counts(),
        over_cap=await memory_over_cap(services, settings, session) if session else None,
    )

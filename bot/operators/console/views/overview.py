"""The overview: every chat the viewer may see, a page at a time, and the service's health."""

from __future__ import annotations

from dataclasses import dataclass

from compactbot.bot.compaction.memory_cap import MemoryOverCap, memory_over_cap
from compactbot.bot.compaction.report import CHANGED_OUTCOMES
from compactbot.bot.ingress.limits import utc_day
from compactbot.bot.operators.console.deps import ConsoleDeps
from compactbot.bot.operators.console.sessions import Viewer
from compactbot.bot.operators.console.views.gauge import (
    Breaker,
    Gauge,
    breaker_for,
    gauge_for,
    main_session,
)
from compactbot.bot.operators.console.views.paging import Page
from compactbot.bot.store.base import ChatRecord, CompressionEvent

CHATS_PER_PAGE = 25
# The newest events read to find the last compaction that changed something.
RECENT_EVENTS = 20


@dataclass(frozen=True, slots=True)
class ChatLine:
    chat: ChatRecord
    gauge: Gauge
    active_messages: int
    archived_messages: int
    last_compaction: CompressionEvent | None
    breaker: Breaker
    today_tokens: int
    daily_budget: int  # 0: unlimited
    over_cap: MemoryOverCap | None  # as /status says it (SPEC 6.11)

    @property
    def budget_pct(self) -> float:
        if self.daily_budget <= 0:
            return 0.0
        return min(100.0, 100.0 * self.today_tokens / self.daily_budget)


@dataclass(frozen=True, slots=True)
class ProbeLine:
    name: str
    problem: str | None


@dataclass(frozen=True, slots=True)
class Overview:
    chats: list[ChatLine]
    page: Page
    probes: list[ProbeLine]


async def visible_chats(deps: ConsoleDeps, viewer: Viewer) -> list[ChatRecord]:
    if viewer.operator:
        return await deps.services.chats.list_chats()
    chat = await deps.services.chats.get_chat(viewer.chat_key or "")
    return [chat] if chat is not None else []


async def overview(deps: ConsoleDeps, viewer: Viewer, page_number: int) -> Overview:
    chats = await visible_chats(deps, viewer)
    page = Page(page_number, CHATS_PER_PAGE, total=len(chats))
    lines = [await chat_line(deps, chat) for chat in chats[page.start : page.end]]
    probes = [ProbeLine(name, problem) for name, problem in await deps.readiness.results()]
    return Overview(lines, page, probes)


async def chat_line(deps: ConsoleDeps, chat: ChatRecord) -> ChatLine:
    services = deps.services
    settings = await services.settings_for(chat.key)
    session = main_session(await services.sessions.list_sessions(chat.key))
    now = deps.now()
    today = utc_day(now)
    events = await services.compaction_events.list_compression_events(
        chat_key=chat.key, limit=RECENT_EVENTS
    )
    return ChatLine(
        chat=chat,
        gauge=gauge_for(
            session,
            window=services.window_for(settings),
            threshold=settings.threshold,
            hygiene_threshold=settings.hygiene_threshold,
            max_tokens=deps.config.model.max_tokens,
        ),
        active_messages=session.active_messages if session is not None else 0,
        archived_messages=await services.transcript.count_archived(chat.key),
        last_compaction=next((e for e in events if e.outcome in CHANGED_OUTCOMES), None),
        breaker=breaker_for(session, now),
        # As the budget counts it: a chat's threads and forum topics spend from it too.
        today_tokens=(
            await services.shared_limits.day_spend(chat.key, None, today, total=False)
        ).chat,
        daily_budget=settings.daily_token_budget,
        over_cap=await memory_over_cap(services, settings, session) if session else None,
    )

"""A chat's pages: overview and history, memory, an entry's sources, search, settings."""

from __future__ import annotations

from aiohttp import web

from compactbot.bot.operators.console.requests import (
    chat_forbidden,
    deps_of,
    page,
    see_other,
    viewer_of,
    visible_chat_key,
)
from compactbot.bot.operators.console.urls import chat_url
from compactbot.bot.operators.console.views.chat import chat_or_404, chat_page
from compactbot.bot.operators.console.views.memory import memory_page, sources_page
from compactbot.bot.operators.console.views.paging import Page, page_number
from compactbot.bot.operators.console.views.purge import rows_of_hits
from compactbot.bot.operators.console.views.settings import (
    SettingError,
    change_setting,
    setting_lines,
)
from compactbot.bot.store.base import SearchHit
from compactbot.bot.store.hits import MAX_SEARCH_LIMIT

routes = web.RouteTableDef()

HITS_PER_PAGE = 20


@routes.get("/chat/{key}")
async def chat_overview(request: web.Request) -> web.StreamResponse:
    key = visible_chat_key(request)
    if key is None:
        return chat_forbidden(request)
    view = await chat_page(
        deps_of(request),
        key,
        session_id=request.query.get("session"),
        events_page=page_number(request.query.get("page")),
    )
    # Where a confirmed purge (routes_purge.py) sends the viewer: the page says how many went.
    purged = request.query.get("purged", "")
    shown = int(purged) if purged.isascii() and purged.isdigit() and len(purged) < 10 else None
    return page(request, "chat.html", view=view, tab="chat", purged=shown)


@routes.get("/chat/{key}/memory")
async def chat_memory(request: web.Request) -> web.StreamResponse:
    key = visible_chat_key(request)
    if key is None:
        return chat_forbidden(request)
    view = await memory_page(
        deps_of(request),
        key,
        session_id=request.query.get("session"),
        kind=request.query.get("kind"),
        show_superseded=request.query.get("superseded") == "1",
        page_number=page_number(request.query.get("page")),
    )
    return page(request, "memory.html", view=view, tab="memory")


@routes.get("/chat/{key}/sources")
async def entry_sources(request: web.Request) -> web.StreamResponse:
    key = visible_chat_key(request)
    if key is None:
        return chat_forbidden(request)
    view = await sources_page(
        deps_of(request),
        key,
        session_id=request.query.get("session"),
        entry_id=request.query.get("entry"),
    )
    return page(request, "sources.html", view=view, tab="memory")


@routes.get("/chat/{key}/search")
async def chat_search(request: web.Request) -> web.StreamResponse:
    key = visible_chat_key(request)
    if key is None:
        return chat_forbidden(request)
    deps = deps_of(request)
    chat = await chat_or_404(deps, key)
    query = request.query.get("q", "").strip()
    shown = Page(page_number(request.query.get("page")), HITS_PER_PAGE)
    hits: list[SearchHit] = []
    more = False
    if query and shown.start < MAX_SEARCH_LIMIT:
        # The store returns the newest matches first, at most MAX_SEARCH_LIMIT of them.
        found = await deps.services.transcript.search(
            chat.key, query, limit=min(shown.end + 1, MAX_SEARCH_LIMIT)
        )
        hits = found[shown.start : shown.end]
        more = len(found) > shown.end
    return page(
        request,
        "search.html",
        chat=chat,
        query=query,
        hits=hits,
        rows=await rows_of_hits(deps.services.transcript, hits),
        shown=shown,
        more=more,
        tab="search",
        limit=MAX_SEARCH_LIMIT,
    )


async def _settings_page(
    request: web.Request,
    key: str,
    *,
    status: int = 200,
    error: str | None = None,
    saved: str | None = None,
) -> web.Response:
    deps, viewer = deps_of(request), viewer_of(request)
    chat = await chat_or_404(deps, key)
    lines = await setting_lines(deps, viewer, chat.key)
    audit = await deps.records.list_audit(chat_key=chat.key, limit=20)
    return page(
        request,
        "settings.html",
        status=status,
        chat=chat,
        lines=lines,
        audit=audit,
        error=error,
        saved=saved,
        tab="settings",
    )


@routes.get("/chat/{key}/settings")
async def settings_form(request: web.Request) -> web.StreamResponse:
    key = visible_chat_key(request)
    if key is None:
        return chat_forbidden(request)
    return await _settings_page(request, key, saved=request.query.get("saved"))


@routes.post("/chat/{key}/settings")
async def settings_change(request: web.Request) -> web.StreamResponse:
    key = visible_chat_key(request)
    if key is None:
        return chat_forbidden(request)
    deps = deps_of(request)
    chat = await chat_or_404(deps, key)
    form = await request.post()
    setting = str(form.get("key", ""))
    value = None if "reset" in form else str(form.get("value", ""))
    try:
        await change_setting(deps, viewer_of(request), chat.key, setting, value)
    except SettingError as refused:
        return await _settings_page(request, chat.key, status=400, error=str(refused))
    # Post/redirect/get: a reload does not send the change again.
    return see_other(chat_url(chat.key, "settings", saved=setting))

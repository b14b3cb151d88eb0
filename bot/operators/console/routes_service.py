"""Pages about the whole service: the overview, usage, the audit log and the doctor's findings."""

from __future__ import annotations

from aiohttp import web

from compactbot.bot.operators.console.chart import stacked_bars
from compactbot.bot.operators.console.requests import deps_of, page, refusal, viewer_of
from compactbot.bot.operators.console.views.overview import overview, visible_chats
from compactbot.bot.operators.console.views.paging import page_number
from compactbot.bot.operators.console.views.usage import (
    PERIODS_DAYS,
    PURPOSE_LABELS,
    period_days,
    usage_report,
)
from compactbot.bot.store.protocols.console_records import AUDIT_PAGE_MAX

routes = web.RouteTableDef()

AUDIT_PER_PAGE = 50


@routes.get("/")
async def overview_page(request: web.Request) -> web.StreamResponse:
    deps, viewer = deps_of(request), viewer_of(request)
    shown = await overview(deps, viewer, page_number(request.query.get("page")))
    return page(request, "overview.html", view=shown, model=deps.model)


@routes.get("/usage")
async def usage_page(request: web.Request) -> web.StreamResponse:
    deps, viewer = deps_of(request), viewer_of(request)
    chats = await visible_chats(deps, viewer)
    chosen = request.query.get("chat") or None
    if chosen is not None:
        if not viewer.may_see(chosen):
            return refusal(request, 403, "You may not see this chat.")
        chats = [c for c in chats if c.key == chosen]
    days = period_days(request.query.get("days"))
    report = await usage_report(deps, chats, days)
    chart = stacked_bars(report.days, report.tokens_by_purpose())
    return page(
        request,
        "usage.html",
        report=report,
        chart=chart,
        days=days,
        periods=PERIODS_DAYS,
        labels=PURPOSE_LABELS,
        chosen=chosen,
        chats=await visible_chats(deps, viewer),
    )


@routes.get("/audit")
async def audit_page(request: web.Request) -> web.StreamResponse:
    deps, viewer = deps_of(request), viewer_of(request)
    # An operator may narrow the log to one chat; a chat admin sees their chat's entries only.
    chat = (request.query.get("chat") or None) if viewer.operator else viewer.chat_key
    before_raw = request.query.get("before", "")
    before = int(before_raw) if before_raw.isascii() and before_raw.isdigit() else None
    entries = await deps.records.list_audit(
        chat_key=chat, before_id=before, limit=min(AUDIT_PER_PAGE + 1, AUDIT_PAGE_MAX)
    )
    more = len(entries) > AUDIT_PER_PAGE
    entries = entries[:AUDIT_PER_PAGE]
    older = entries[-1].id if more and entries else None
    return page(request, "audit.html", entries=entries, chat=chat, older=older, before=before)


@routes.get("/health")
async def health_page(request: web.Request) -> web.StreamResponse:
    deps, viewer = deps_of(request), viewer_of(request)
    if not viewer.operator:
        return refusal(request, 403, "Only operators may run the doctor.")
    findings = await deps.doctor()
    probes = await deps.readiness.results()
    return page(request, "health.html", findings=findings, probes=probes, model=deps.model)

"""Purging a message or a member in a chat (SPEC 16): a form, a confirmation page, then the purge.

Both steps are POSTs carrying the session's CSRF token (checked in web.py); the first only shows
what would be erased, and nothing changes until the confirmation page's form is sent.
"""

from __future__ import annotations

from aiohttp import web

from compactbot.bot.operators.console.requests import (
    chat_forbidden,
    deps_of,
    page,
    refusal,
    see_other,
    viewer_of,
    visible_chat_key,
)
from compactbot.bot.operators.console.urls import chat_url
from compactbot.bot.operators.console.views.purge import PurgeRefused, purge, purge_target

routes = web.RouteTableDef()


@routes.post("/chat/{key}/purge")
async def purge_step(request: web.Request) -> web.StreamResponse:
    key = visible_chat_key(request)
    if key is None:
        return chat_forbidden(request)
    deps = deps_of(request)
    form = await request.post()
    fields = {name: value for name, value in form.items() if isinstance(value, str)}
    try:
        target = await purge_target(deps, key, fields)
    except PurgeRefused as refused:
        return refusal(request, 400, str(refused))
    if fields.get("confirm") != "1" or not target.count:
        return page(request, "purge.html", target=target, tab="chat")
    erased = await purge(deps, viewer_of(request), target)
    # Post/redirect/get: a reload shows the count again instead of sending the purge again.
    return see_other(chat_url(target.chat.key, purged=erased))

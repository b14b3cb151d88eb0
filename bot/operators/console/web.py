"""The console's aiohttp application: security headers, sessions and CSRF in front of the pages.

`OperatorEndpoint` mounts it under /console next to /metrics, /healthz and /readyz.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from compactbot.bot.operators.console import (
    routes_auth,
    routes_chat,
    routes_purge,
    routes_service,
)
from compactbot.bot.operators.console.auth import same_secret
from compactbot.bot.operators.console.cookies import SESSION_COOKIE
from compactbot.bot.operators.console.deps import ConsoleDeps
from compactbot.bot.operators.console.rendering import Pages, load_assets
from compactbot.bot.operators.console.requests import (
    DEPS_KEY,
    PAGES_KEY,
    STATIC_KEY,
    VIEWER_KEY,
    refusal,
)
from compactbot.bot.operators.console.urls import PREFIX, SIGN_IN_PATH, with_query
from compactbot.bot.operators.console.views.chat import ChatNotFound
from compactbot.bot.operators.console.views.memory import EntryNotFound
from compactbot.bot.operators.console.views.purge import MessageNotFound

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Nothing is loaded from anywhere but this origin, no script runs, no page may frame this one, and
# no Referer carries a one-time link's path to another site.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self';"
        " frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
# Paths (under /console) that answer without a session: signing in, the stylesheet, languages.
PUBLIC_PATHS = ("/signin", "/link", "/static/", "/lang/")


@web.middleware
async def security_headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        exc.headers.update(SECURITY_HEADERS)
        raise
    except ChatNotFound:
        response = refusal(request, 404, "There is no such chat.")
    except EntryNotFound:
        response = refusal(request, 404, "There is no such memory entry.")
    except MessageNotFound:
        response = refusal(request, 404, "There is no such message in this chat.")
    response.headers.update(SECURITY_HEADERS)
    return response


@web.middleware
async def sessions(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Every page but the public ones needs a session; every POST needs the session's token."""
    inside = request.path.removeprefix(PREFIX)
    if any(inside.startswith(path) for path in PUBLIC_PATHS):
        return await handler(request)
    deps = request.config_dict[DEPS_KEY]
    viewer = await deps.sign_in.viewer(request.cookies.get(SESSION_COOKIE))
    if viewer is None:
        if request.method == "GET":
            raise web.HTTPSeeOther(with_query(SIGN_IN_PATH, next=request.path_qs))
        return refusal(request, 403, "Sign in first.")
    request[VIEWER_KEY] = viewer
    if request.method == "POST":
        form = await request.post()
        given = form.get("csrf")
        if not same_secret(given if isinstance(given, str) else None, viewer.csrf):
            log.info("console: a form without its CSRF token was refused (%s)", request.path)
            return refusal(request, 403, "This form has expired. Reload the page and try again.")
    return await handler(request)


async def console_app(deps: ConsoleDeps) -> web.Application:
    """The application to mount at /console (templates and the stylesheet are read here)."""
    templates, static = await load_assets()
    app = web.Application(middlewares=[security_headers, sessions])
    app[DEPS_KEY] = deps
    app[PAGES_KEY] = Pages(templates)
    app[STATIC_KEY] = static
    for module in (routes_auth, routes_service, routes_chat, routes_purge):
        app.add_routes(module.routes)
    return app

"""What a handler gets from a request: the console's parts, the viewer, and a page to answer."""

from __future__ import annotations

from aiohttp import web

from compactbot.bot.operators.console.deps import ConsoleDeps
from compactbot.bot.operators.console.i18n import request_language
from compactbot.bot.operators.console.rendering import Pages
from compactbot.bot.operators.console.sessions import Viewer

DEPS_KEY = web.AppKey("console_deps", ConsoleDeps)
PAGES_KEY = web.AppKey("console_pages", Pages)
STATIC_KEY = web.AppKey("console_static", dict)
VIEWER_KEY = web.RequestKey("console_viewer", Viewer)


def deps_of(request: web.Request) -> ConsoleDeps:
    return request.config_dict[DEPS_KEY]


def viewer_of(request: web.Request) -> Viewer:
    viewer = request.get(VIEWER_KEY)
    assert isinstance(viewer, Viewer), "handler registered without the session middleware"
    return viewer


def visible_chat_key(request: web.Request) -> str | None:
    """The chat in the path, or None when this viewer may not see it (nor change anything in it)."""
    key = request.match_info["key"]
    return key if viewer_of(request).may_see(key) else None


def chat_forbidden(request: web.Request) -> web.Response:
    return refusal(request, 403, "You may not see this chat.")


def page(
    request: web.Request, template: str, *, status: int = 200, **context: object
) -> web.Response:
    """`template` rendered in the viewer's language, with the viewer and the CSRF token."""
    viewer = request.get(VIEWER_KEY)
    pages = request.config_dict[PAGES_KEY]
    html = pages.render(
        template,
        request_language(request),
        viewer=viewer,
        csrf=viewer.csrf if isinstance(viewer, Viewer) else "",
        here=request.path_qs,
        **context,
    )
    return web.Response(text=html, status=status, content_type="text/html", charset="utf-8")


def refusal(request: web.Request, status: int, message: str) -> web.Response:
    """An error page: 403 for what this viewer may not see or do, 404 for what is not there."""
    return page(request, "error.html", status=status, message=message)


def see_other(location: str) -> web.Response:
    """A 303 to `location` that cookies can be set on (an HTTPException is raised, not kept)."""
    return web.Response(status=303, headers={"Location": location})

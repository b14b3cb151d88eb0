"""Signing in (operator token or one-time link), signing out, the language switch, the CSS."""

from __future__ import annotations

from aiohttp import web

from compactbot.bot.operators.console.auth import csrf_token, new_secret, same_secret
from compactbot.bot.operators.console.cookies import (
    FORM_COOKIE,
    FORM_COOKIE_SECONDS,
    LANGUAGE_COOKIE,
    LANGUAGE_COOKIE_SECONDS,
    SESSION_COOKIE,
    clear_cookie,
    set_cookie,
)
from compactbot.bot.operators.console.i18n import parse_language
from compactbot.bot.operators.console.proxy import client_address, is_https
from compactbot.bot.operators.console.requests import (
    STATIC_KEY,
    deps_of,
    page,
    refusal,
    see_other,
    viewer_of,
)
from compactbot.bot.operators.console.sessions import SignInRefused, Viewer
from compactbot.bot.operators.console.urls import PREFIX, SIGN_IN_PATH, chat_url

routes = web.RouteTableDef()

CSS_TYPE = "text/css"


def _safe_next(raw: str | None) -> str:
    """Only a path inside the console: never an open redirect to another site."""
    if raw and raw.startswith(PREFIX + "/") and not raw.startswith("//"):
        return raw
    return PREFIX + "/"


def _form_secret(request: web.Request) -> tuple[str, bool]:
    """The pre-sign-in form cookie's value, and whether it must be set now."""
    existing = request.cookies.get(FORM_COOKIE)
    if existing and len(existing) == len(new_secret()):
        return existing, False
    return new_secret(), True


def _form_page(
    request: web.Request, template: str, status: int = 200, **context: object
) -> web.Response:
    secret, fresh = _form_secret(request)
    response = page(request, template, status=status, form_csrf=csrf_token(secret), **context)
    if fresh:
        deps = deps_of(request)
        secure = is_https(request, deps.trusted_proxies)
        set_cookie(response, FORM_COOKIE, secret, secure=secure, max_age=FORM_COOKIE_SECONDS)
    return response


async def _form_checked(request: web.Request) -> dict[str, str] | None:
    """The posted fields, or None when the form's token does not match its cookie."""
    form = await request.post()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    cookie = request.cookies.get(FORM_COOKIE)
    if not cookie or not same_secret(fields.get("csrf"), csrf_token(cookie)):
        return None
    return fields


def _signed_in(request: web.Request, viewer: Viewer, location: str) -> web.StreamResponse:
    deps = deps_of(request)
    response = see_other(location)
    set_cookie(
        response,
        SESSION_COOKIE,
        viewer.secret,
        secure=is_https(request, deps.trusted_proxies),
        max_age=int(deps.config.console.session_hours * 3600),
    )
    clear_cookie(response, FORM_COOKIE)
    return response


@routes.get("/signin")
async def sign_in_form(request: web.Request) -> web.StreamResponse:
    return _form_page(
        request, "signin.html", next=_safe_next(request.query.get("next")), error=None
    )


@routes.post("/signin")
async def sign_in(request: web.Request) -> web.StreamResponse:
    fields = await _form_checked(request)
    if fields is None:
        return refusal(request, 403, "This form has expired. Reload the page and try again.")
    deps = deps_of(request)
    address = client_address(request, deps.trusted_proxies)
    next_path = _safe_next(fields.get("next"))
    try:
        viewer = await deps.sign_in.with_token(fields.get("token", ""), address)
    except SignInRefused as refused:
        return _form_page(request, "signin.html", status=403, next=next_path, error=str(refused))
    return _signed_in(request, viewer, next_path)


@routes.get("/link/{secret}")
async def link_form(request: web.Request) -> web.StreamResponse:
    # Showing the form uses nothing up: link previews of chat apps fetch the URL too.
    return _form_page(request, "link.html", secret=request.match_info["secret"], error=None)


@routes.post("/link")
async def link_sign_in(request: web.Request) -> web.StreamResponse:
    fields = await _form_checked(request)
    if fields is None:
        return refusal(request, 403, "This form has expired. Reload the page and try again.")
    deps = deps_of(request)
    secret = fields.get("secret", "")
    try:
        viewer = await deps.sign_in.with_link(secret, client_address(request, deps.trusted_proxies))
    except SignInRefused as refused:
        return _form_page(request, "link.html", status=403, secret=secret, error=str(refused))
    return _signed_in(request, viewer, chat_url(viewer.chat_key or ""))


@routes.post("/signout")
async def sign_out(request: web.Request) -> web.StreamResponse:
    await deps_of(request).sign_in.sign_out(viewer_of(request))
    response = see_other(SIGN_IN_PATH)
    clear_cookie(response, SESSION_COOKIE)
    return response


@routes.get("/lang/{code}")
async def choose_language(request: web.Request) -> web.StreamResponse:
    language = parse_language(request.match_info["code"])
    response = see_other(_safe_next(request.query.get("next")))
    if language is not None:
        secure = is_https(request, deps_of(request).trusted_proxies)
        set_cookie(
            response, LANGUAGE_COOKIE, language, secure=secure, max_age=LANGUAGE_COOKIE_SECONDS
        )
    return response


@routes.get("/static/console.css")
async def stylesheet(request: web.Request) -> web.StreamResponse:
    return web.Response(body=request.config_dict[STATIC_KEY]["console.css"], content_type=CSS_TYPE)

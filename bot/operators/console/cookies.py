"""The console's cookies and the flags every one of them carries."""

from __future__ import annotations

from aiohttp import web

from compactbot.bot.operators.console.urls import PREFIX

SESSION_COOKIE = "compactbot_session"
# A random value set with the sign-in forms: the form must echo its CSRF token (double submit).
FORM_COOKIE = "compactbot_form"
LANGUAGE_COOKIE = "compactbot_lang"
FORM_COOKIE_SECONDS = 3600
LANGUAGE_COOKIE_SECONDS = 365 * 24 * 3600


def set_cookie(
    response: web.StreamResponse, name: str, value: str, *, secure: bool, max_age: int
) -> None:
    """HttpOnly and SameSite=Strict always; Secure whenever the browser came over TLS."""
    response.set_cookie(
        name,
        value,
        max_age=max_age,
        path=PREFIX,
        secure=secure,
        httponly=True,
        samesite="Strict",
    )


def clear_cookie(response: web.StreamResponse, name: str) -> None:
    response.del_cookie(name, path=PREFIX)

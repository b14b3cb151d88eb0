"""The Bot API wire format as FakeTelegram speaks it: params in, errors and HTML checks out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from html.parser import HTMLParser
from typing import Any

import aiohttp
from aiohttp import web

from tests.fakes.telegram_updates import utf16_len

TELEGRAM_MAX_UTF16 = 4096  # the real server rejects longer texts with "message is too long"
# Values that must stay strings even when they look like JSON ("123" would decode to an int).
RAW_STRING_PARAMS = frozenset({"text", "caption", "secret_token", "url", "parse_mode"})
# The tags Telegram's HTML parse mode accepts; anything else is a 400 "can't parse entities".
TELEGRAM_HTML_TAGS = frozenset(
    {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre"}
    | {"blockquote", "tg-spoiler", "span", "tg-emoji"}
)


class BadRequestError(Exception):
    """A request the real server would refuse with 400."""


def error_response(
    status: int, description: str, parameters: dict[str, Any] | None = None
) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if parameters:
        body["parameters"] = parameters
    return web.json_response(body, status=status)


async def decode_params(request: web.Request) -> dict[str, Any]:
    if request.content_type == "application/json":
        body = await request.json()
        return dict(body) if isinstance(body, dict) else {}
    raw: Mapping[str, Any] = await request.post() if request.can_read_body else request.query
    params: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(value, str) or key in RAW_STRING_PARAMS:
            params[key] = value
            continue
        try:
            params[key] = json.loads(value)
        except ValueError:
            params[key] = value
    return params


def check_text(text: str, parse_mode: str | None) -> str:
    """The text a user would see; raises like Telegram for bad HTML or an over-long message."""
    visible = _parse_html(text) if parse_mode == "HTML" else text
    if not visible.strip():
        raise BadRequestError("message text is empty")
    if utf16_len(visible) > TELEGRAM_MAX_UTF16:
        raise BadRequestError("message is too long")
    return visible


def _parse_html(text: str) -> str:
    checker = _HtmlChecker()
    checker.feed(text)
    checker.close()
    if checker.error is None and checker.stack:
        checker.error = f'can\'t find end tag corresponding to start tag "{checker.stack[-1]}"'
    if checker.error is not None:
        raise BadRequestError(f"can't parse entities: {checker.error}")
    return "".join(checker.parts)


class _HtmlChecker(HTMLParser):
    """Enough of Telegram's HTML parser to reject what it rejects: unknown or unbalanced tags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.parts: list[str] = []
        self.error: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TELEGRAM_HTML_TAGS and self.error is None:
            self.error = f'unsupported start tag "{tag}"'
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if (not self.stack or self.stack.pop() != tag) and self.error is None:
            self.error = f'unexpected end tag "{tag}"'

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


async def post_webhook_update(
    url: str, update: Mapping[str, Any], *, secret: str | None = None, timeout_seconds: float = 5
) -> int:
    """POST an Update to a webhook URL the way Telegram does; returns the HTTP status."""
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
    timeout = aiohttp.ClientTimeout(total=timeout_seconds)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, json=dict(update), headers=headers) as response,
    ):
        return response.status

"""The console's paths: one place that knows how a chat key sits in a URL."""

from __future__ import annotations

from urllib.parse import quote, urlencode

PREFIX = "/console"
SIGN_IN_PATH = f"{PREFIX}/signin"
LINK_PATH = f"{PREFIX}/link"
STATIC_CSS = f"{PREFIX}/static/console.css"


def chat_url(chat_key: str, view: str = "", **query: object) -> str:
    """`/console/chat/<key>[/view][?query]`; the key is quoted whole (it holds colons)."""
    path = f"{PREFIX}/chat/{quote(chat_key, safe='')}" + (f"/{view}" if view else "")
    return with_query(path, **query)


def with_query(path: str, **query: object) -> str:
    """`path` with `query` added (None and "" left out), also to a path that has a query."""
    pairs = {k: v for k, v in query.items() if v is not None and v != ""}
    if not pairs:
        return path
    return f"{path}{'&' if '?' in path else '?'}{urlencode(pairs)}"

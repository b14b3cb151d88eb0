"""Jinja2 templates shipped in the package, read once at start-up and rendered with autoescape.

Jinja2: server-side templates with inheritance and autoescaping on by default, the most used
engine in Python web code, and a pure-Python wheel; no build step and no JavaScript.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from importlib import resources

from jinja2 import DictLoader, Environment, StrictUndefined

from compactbot.bot.i18n import Language
from compactbot.bot.operators.console import urls
from compactbot.bot.operators.console.i18n import LANGUAGES, translator

PACKAGE = "compactbot.bot.operators.console"


def _read_folder(folder: str) -> dict[str, bytes]:
    root = resources.files(PACKAGE).joinpath(folder)
    return {item.name: item.read_bytes() for item in root.iterdir() if item.is_file()}


async def load_assets() -> tuple[dict[str, str], dict[str, bytes]]:
    """(templates by name, static files by name), read off the event loop."""
    templates = await asyncio.to_thread(_read_folder, "templates")
    static = await asyncio.to_thread(_read_folder, "static")
    return {name: data.decode() for name, data in templates.items()}, static


def when(timestamp: float | None) -> str:
    if not timestamp:
        return "—"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


def number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:,.1f}"


class Pages:
    """Renders a page in a language; templates never see the request or the store."""

    def __init__(self, templates: dict[str, str]) -> None:
        env = Environment(
            loader=DictLoader(templates),
            autoescape=True,
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        env.filters["when"] = when
        env.filters["number"] = number
        env.globals.update(
            chat_url=urls.chat_url,
            with_query=urls.with_query,
            prefix=urls.PREFIX,
            css=urls.STATIC_CSS,
            languages=LANGUAGES,
        )
        self._env = env

    def render(self, name: str, language: Language, **context: object) -> str:
        template = self._env.get_template(name)
        return template.render(t=translator(language), lang=language, **context)

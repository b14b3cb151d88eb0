"""The console's words in English and Chinese, like the bot's own (bot/i18n.py).

Pages are written in English; `translator("zh")` looks each text up in a catalog and falls back to
the English one, so a missing entry shows English, never nothing. tests/console checks that every
text the templates use has its Chinese entry.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web

from compactbot.bot.i18n import CHINESE, ENGLISH, Language
from compactbot.bot.operators.console.catalog import CHINESE_TEXTS
from compactbot.bot.operators.console.cookies import LANGUAGE_COOKIE

LANGUAGES: dict[Language, str] = {ENGLISH: "English", CHINESE: "中文"}
_BY_CODE: dict[str, Language] = {ENGLISH: ENGLISH, CHINESE: CHINESE}

Translate = Callable[..., str]


def translator(language: Language) -> Translate:
    """t("{n} days", n=3): the text in `language`, its {fields} filled in."""

    def translate(text: str, **fields: object) -> str:
        chosen = CHINESE_TEXTS.get(text, text) if language == CHINESE else text
        return chosen.format(**fields) if fields else chosen

    return translate


def request_language(request: web.Request) -> Language:
    """The language cookie, else the browser's first preference, else English."""
    chosen = parse_language(request.cookies.get(LANGUAGE_COOKIE, ""))
    if chosen is not None:
        return chosen
    accepted = request.headers.get("Accept-Language", "").split(",")[0].strip().lower()
    return CHINESE if accepted.startswith("zh") else ENGLISH


def parse_language(code: str) -> Language | None:
    return _BY_CODE.get(code)

"""When an unaddressed message still asks the bot (per-chat `activation`), for every platform."""

from __future__ import annotations

import re

from compactbot.bot.settings.chat_settings import Activation


def contains_keyword(text: str, keyword: str) -> bool:
    """The keyword as a whole word or phrase, any case ("bot" does not fire on "robot")."""
    pattern = rf"(?<!\w){re.escape(keyword.strip())}(?!\w)"
    return re.search(pattern, text, re.IGNORECASE) is not None


def activated(
    activation: Activation, keyword: str | None, text: str, *, mentions_others: bool
) -> bool:
    """Whether the chat's activation makes an otherwise unaddressed message a request."""
    if activation == "mention" or mentions_others:
        # People talking to someone else are not talking to the bot.
        return False
    if activation == "always":
        return True
    return keyword is not None and bool(keyword.strip()) and contains_keyword(text, keyword)

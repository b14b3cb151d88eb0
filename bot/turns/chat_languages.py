"""The language our own words take in each chat: its setting, or the members' platform code."""

from __future__ import annotations

from compactbot.bot.events import InboundMessage
from compactbot.bot.i18n import Language, language_for, localize
from compactbot.bot.services import Services

# Bounds the codes kept in memory; past it new chats fall back to their setting alone.
KNOWN_CHATS_MAX = 100_000


class ChatLanguages:
    """The platform language code last seen per chat, for notices when language is "auto"."""

    def __init__(self, services: Services) -> None:
        self._services = services
        self._codes: dict[str, str] = {}

    def remember(self, message: InboundMessage) -> None:
        if message.language_code and len(self._codes) < KNOWN_CHATS_MAX:
            self._codes[message.chat_key] = message.language_code

    def language(self, chat_key: str, setting: str) -> Language:
        return language_for(setting, self._codes.get(chat_key))

    async def localized(self, chat_key: str, text: str) -> str:
        """Our own words in the chat's language (model output is never localized)."""
        settings = await self._services.settings_for(chat_key)
        return localize(text, self.language(chat_key, settings.language))

"""Per-chat raw settings kept in memory, so storing a message reads no settings row.

Writes through the same store drop the entry at once; a write by another process (the operator
CLI) is seen after at most `ttl_seconds`.
"""

from __future__ import annotations

from collections.abc import Callable

# Bounds how long `compactbot config set` from another process takes to reach a running bot.
SETTINGS_CACHE_SECONDS = 5.0
SETTINGS_CACHE_MAX_CHATS = 100_000


class RawSettingsCache:
    def __init__(
        self, clock: Callable[[], float], *, ttl_seconds: float = SETTINGS_CACHE_SECONDS
    ) -> None:
        self._clock = clock
        self._ttl = ttl_seconds
        self._entries: dict[str, tuple[float, dict[str, str]]] = {}

    def get(self, chat_key: str) -> dict[str, str] | None:
        entry = self._entries.get(chat_key)
        if entry is None or self._clock() - entry[0] >= self._ttl:
            return None
        return dict(entry[1])

    def put(self, chat_key: str, values: dict[str, str]) -> None:
        if len(self._entries) >= SETTINGS_CACHE_MAX_CHATS:
            self._entries.clear()
        self._entries[chat_key] = (self._clock(), dict(values))

    def drop(self, chat_key: str) -> None:
        self._entries.pop(chat_key, None)

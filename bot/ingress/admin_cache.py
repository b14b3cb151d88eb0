"""Whether a member is a chat admin, as the platform last said, shared by every worker."""

from __future__ import annotations

import time
from collections.abc import Callable

from compactbot.bot.store.protocols.shared_limits import SharedLimits, limit_key


class AdminCache:
    """Platform admin answers per (platform, chat, user), shared by every worker for a while."""

    def __init__(
        self, store: SharedLimits, ttl_seconds: float, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._store = store
        self._ttl = ttl_seconds
        self._clock = clock

    async def get(self, platform: str, chat_id: str, user_id: str) -> bool | None:
        return await self._store.cached_admin(limit_key(platform, chat_id, user_id), self._clock())

    async def put(self, platform: str, chat_id: str, user_id: str, is_admin: bool) -> None:
        if self._ttl > 0:
            key = limit_key(platform, chat_id, user_id)
            await self._store.cache_admin(key, is_admin, self._clock() + self._ttl)

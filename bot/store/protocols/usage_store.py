"""The storage protocol of token usage: per chat, member, UTC day and purpose (SPEC 5)."""

from __future__ import annotations

from typing import Protocol

from compactbot.bot.store.base import UsagePurpose, UsageRow


class UsageStore(Protocol):
    """Prompt and completion tokens and calls, summed per (chat, user, day, purpose)."""

    async def add_usage(
        self,
        chat_key: str,
        user_id: str | None,
        purpose: UsagePurpose,
        prompt_tokens: int,
        completion_tokens: int,
        *,
        day: str | None = None,
    ) -> None: ...
    async def usage(self, chat_key: str, since_day: str) -> list[UsageRow]: ...

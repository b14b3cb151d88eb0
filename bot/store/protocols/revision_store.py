"""The storage protocol of stored messages by platform id: reply context, edits and
the revisions an edit keeps (bot/store/sqlite/revisions.py, bot/store/postgres/revisions.py)."""

from __future__ import annotations

from typing import Any, Protocol

from compactbot.bot.store.base import StoredMessage


class RevisionStore(Protocol):
    """A message found by its platform id, changed in place, its earlier texts kept."""

    async def find_platform_message(
        self, chat_key: str, platform_message_id: str
    ) -> StoredMessage | None: ...
    async def edit_platform_message(
        self,
        chat_key: str,
        platform_message_id: str,
        content: str,
        tokens: int,
        hints: int | None = None,
    ) -> bool: ...
    async def message_revisions(self, message_id: int) -> list[str]: ...
    async def set_message_content(
        self, message_id: int, content: Any, tokens: int, hints: int | None = None
    ) -> None: ...
    async def set_author_admin(self, message_id: int, admin: bool) -> None: ...

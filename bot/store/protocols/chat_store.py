"""The storage protocol of chats: a chat, thread or forum topic per `platform:chat_id` key."""

from __future__ import annotations

from typing import Protocol

from compactbot.bot.store.base import ChatRecord


class ChatStore(Protocol):
    """Chats and threads; a thread names its parent chat, whose settings it inherits."""

    async def upsert_chat(
        self,
        key: str,
        platform: str,
        *,
        title: str | None = None,
        parent_key: str | None = None,
        is_group: bool = True,
    ) -> ChatRecord: ...
    async def get_chat(self, key: str) -> ChatRecord | None: ...
    async def list_chats(self) -> list[ChatRecord]: ...
    async def migrate_chat(self, old_key: str, new_key: str) -> None: ...

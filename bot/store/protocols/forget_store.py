"""The storage protocol of forgetting on request (SPEC 16)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class ForgetStore(Protocol):
    """Forgetting on request (SPEC 16; what changes: bot/store/forgetting.py). Each returns how
    many stored rows it forgot; `author_id` limits `forget_messages` to that member's own."""

    async def forget_messages(
        self, chat_key: str, platform_message_ids: Sequence[str], *, author_id: str | None = None
    ) -> int: ...

    async def forget_rows(self, chat_key: str, row_ids: Sequence[int]) -> int:
        """The rows (a message stored without a platform id, such as the bot's reply) and the
        compactions' verbatim copies of them."""
        ...

    async def forget_member(self, chat_key: str, author_id: str) -> int: ...
    async def forget_before(self, chat_key: str, cutoff: float) -> int: ...
    async def count_member_messages(self, chat_key: str, author_id: str) -> int: ...

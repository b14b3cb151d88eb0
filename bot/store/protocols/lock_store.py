"""The storage protocol of compaction leases: one row per session under compaction (SPEC 4)."""

from __future__ import annotations

from typing import Protocol

from compactbot.bot.store.base import LockRecord


class LockStore(Protocol):
    """Compaction leases as rows with an expiry, so every process sees one holder per session."""

    async def acquire_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool: ...
    async def renew_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool: ...
    async def release_lock(self, session_id: int, holder: str) -> bool: ...
    async def lock_holder(self, session_id: int) -> str | None: ...
    async def list_locks(self) -> list[LockRecord]:
        """Every lock row, expired or not (start-up reclaims the dead holders' rows)."""
        ...

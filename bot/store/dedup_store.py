"""The storage protocol of redelivery dedup: the platform update ids already processed."""

from __future__ import annotations

from typing import Protocol


class DedupStore(Protocol):
    """Update ids seen, so a platform's redelivery is not handled twice."""

    async def mark_update_processed(self, platform: str, update_id: str) -> bool:
        """True the first time an update id is seen, False for a redelivery."""
        ...

"""The storage protocol of redelivery dedup: the platform update ids already processed."""

from __future__ import annotations

from typing import Protocol

# Telegram redelivers an unacknowledged update for at most 24 hours; a week is ample margin.
PROCESSED_UPDATES_KEEP_SECONDS = 7 * 24 * 3600
PRUNE_INTERVAL_SECONDS = 3600


class DedupStore(Protocol):
    """Update ids seen, so a platform's redelivery is not handled twice."""

    async def mark_update_processed(self, platform: str, update_id: str) -> bool:
        """True the first time an update id is seen, False for a redelivery."""
        ...

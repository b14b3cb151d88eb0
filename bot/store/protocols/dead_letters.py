"""Updates a platform sent that could not be ingested, kept for the operator instead of lost."""

from __future__ import annotations

from typing import Protocol

from compactbot.bot.store.base import DeadLetter
from compactbot.bot.store.rows import Row

# A dead letter is evidence, not a backup: enough of the payload to see what went wrong.
MAX_PAYLOAD_CHARS = 16_000
MAX_ERROR_CHARS = 500


def dead_letter_from_row(row: Row) -> DeadLetter:
    return DeadLetter(
        id=row["id"],
        platform=row["platform"],
        update_id=row["update_id"],
        received_at=row["received_at"],
        error=row["error"],
        payload=row["payload"],
    )


class DeadLetterStore(Protocol):
    """Where ingress puts an update it parsed or stored in vain, so it can be acknowledged."""

    async def record_dead_letter(
        self, platform: str, update_id: str, error: str, payload: str
    ) -> bool:
        """True the first time this update is recorded; False when it already was."""
        ...

    async def list_dead_letters(self, limit: int = 50) -> list[DeadLetter]: ...

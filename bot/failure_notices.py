"""What a chat is told when a question fails: never nothing, and the long story once per kind."""

from __future__ import annotations

import time
from collections.abc import Callable

# The full explanation of one kind of failure is repeated at most this often per chat.
FULL_NOTICE_INTERVAL_SECONDS = 600.0
# Chats remembered at once; past this, the ones told longest ago are forgotten first.
MAX_CHATS = 100_000
REPEAT_NOTICE = (
    "⚠️ I couldn't answer this one either (same problem as above). Your message is saved."
)


class FailureNotices:
    """Picks the notice for a failed question: the full text first, a short line after that.

    Every failed question gets a notice, so a queued question never fails in silence; only the
    explanation is rate-limited, per chat and per kind of failure (the kind is its full text).
    """

    def __init__(
        self,
        interval_seconds: float = FULL_NOTICE_INTERVAL_SECONDS,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._interval = interval_seconds
        self._clock = clock
        self._told: dict[str, dict[str, float]] = {}

    def notice_for(self, chat_key: str, full_text: str) -> str:
        now = self._clock()
        told = self._told.setdefault(chat_key, {})
        last = told.get(full_text)
        if last is not None and now - last < self._interval:
            return REPEAT_NOTICE
        told[full_text] = now
        if len(self._told) > MAX_CHATS:
            oldest = min(self._told, key=lambda key: max(self._told[key].values(), default=0.0))
            del self._told[oldest]
        return full_text

    def recovered(self, chat_key: str) -> None:
        """The chat got an answer: the next failure is explained in full again."""
        self._told.pop(chat_key, None)

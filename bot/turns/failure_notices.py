"""What a chat is told when a question fails: never nothing, and the long story once per kind."""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable

from compactbot.bot.ingress.limits import NoticeGate
from compactbot.bot.store.protocols.shared_limits import SharedLimits, limit_key

log = logging.getLogger(__name__)

# The full explanation of one kind of failure is repeated at most this often per chat.
FULL_NOTICE_INTERVAL_SECONDS = 600.0
REPEAT_NOTICE = (
    "⚠️ I couldn't answer this one either (same problem as above). Your message is saved."
)


class FailureNotices:
    """Picks the notice for a failed question: the full text first, a short line after that.

    Every failed question gets a notice, so a queued question never fails in silence; only the
    explanation is rate-limited, per chat and per kind of failure (the kind is its full text).
    What was said is kept in the store, so the next worker to fail in the chat knows it too.
    """

    def __init__(
        self,
        store: SharedLimits,
        interval_seconds: float = FULL_NOTICE_INTERVAL_SECONDS,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._interval = interval_seconds
        self._clock = clock

    async def notice_for(self, chat_key: str, full_text: str) -> str:
        gate = NoticeGate(self._store, _scope(chat_key), self._interval, clock=self._clock)
        # A digest keeps the key short whatever the text; the same text gives the same key.
        kind = hashlib.sha256(full_text.encode()).hexdigest()
        return full_text if await gate.first((kind,)) else REPEAT_NOTICE

    async def recovered(self, chat_key: str) -> None:
        """The chat got an answer: the next failure is explained in full again."""
        try:
            await self._store.notice_reset(_scope(chat_key))
        except Exception as err:
            # The answer is out; at worst the next failure gets the short line.
            log.warning("failure notices not reset (chat=%s): %s", chat_key, type(err).__name__)


def _scope(chat_key: str) -> str:
    return limit_key("failure", chat_key)

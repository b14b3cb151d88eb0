"""A chat's questions waiting for their answers, bounded by coalescing (issue 13).

When answers cannot keep up (a slow model, or the platform's send limit: Telegram allows a
group about 20 messages a minute), questions queue in the chat's lane. Past a few waiting, the
older ones are not answered one by one — nobody would receive all those answers in time, and
each costs a model call — the newest is answered instead, with the skipped ones in its context
(they are in the transcript before it), and the chat is told so.
"""

from __future__ import annotations

import itertools
from collections import deque

# More questions than this waiting in one chat collapse into an answer to the newest: about a
# minute of sends in a Telegram group (its limit is 20 messages a minute).
MAX_WAITING_ANSWERS = 20


class AnswerBacklog:
    """Tickets per lane, in arrival order; `begin` says whether a ticket's answer still runs."""

    def __init__(self, max_waiting: int = MAX_WAITING_ANSWERS) -> None:
        self._max_waiting = max_waiting
        self._tickets = itertools.count(1)
        self._waiting: dict[str, deque[int]] = {}
        self._collapse_to: dict[str, int] = {}
        self._skipped: dict[str, int] = {}

    def enqueue(self, lane: str) -> int:
        ticket = next(self._tickets)
        self._waiting.setdefault(lane, deque()).append(ticket)
        return ticket

    def begin(self, lane: str, ticket: int) -> int | None:
        """None: skip this question (a newer one answers it); else how many skipped ones this
        answer covers."""
        waiting = self._waiting[lane]
        if len(waiting) > self._max_waiting:
            self._collapse_to[lane] = waiting[-1]
        waiting.remove(ticket)
        if not waiting:
            del self._waiting[lane]
        if ticket < self._collapse_to.get(lane, 0):
            self._skipped[lane] = self._skipped.get(lane, 0) + 1
            return None
        self._collapse_to.pop(lane, None)
        return self._skipped.pop(lane, 0)

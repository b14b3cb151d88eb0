"""The gateway's one extension point for where answers and replies wait (SPEC 15).

`Gateway` stores updates and runs commands in order; a `TurnQueue` decides what happens to what
must be said afterwards. `LaneTurns` keeps it in the process's per-chat lanes (`compactbot run`);
the durable gateway's queue commits it to the PostgreSQL inbox, for any worker to answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from compactbot.bot.events import Adapter, ReplyTarget
from compactbot.bot.ingress.steps import Delivery
from compactbot.bot.turns.answer import Question


class TurnQueue(Protocol):
    """Where a chat's answers and our replies wait behind its earlier ones."""

    @property
    def turn_reads_files(self) -> bool:
        """True when a queued answer reads its message's files itself, so the ingress does not."""
        ...

    def stored_with(self, delivery: Delivery) -> Delivery:
        """The delivery as it is to be stored: a durable queue adds the message's turn to it."""
        ...

    async def answer(self, question: Question, lane: str) -> None:
        """Queue the answer to a stored, addressed message."""
        ...

    async def queue_replies(
        self, lane: str, adapter: Adapter, target: ReplyTarget, texts: Sequence[str]
    ) -> None:
        """A command's replies (our words, localized here), behind the chat's queued turns."""
        ...

    async def report(self, lane: str, adapter: Adapter, target: ReplyTarget, text: str) -> None:
        """A line a command reports later, such as a background compaction's result."""
        ...

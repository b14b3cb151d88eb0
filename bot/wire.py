"""The moment a reply's request leaves for the platform, after any client-side pacing.

The outbox records a send as begun only then: a reply still waiting in a rate limiter when its
worker dies never reached the chat, so another worker may send it; one that left may have.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Literal, Protocol, runtime_checkable

Leaving = Callable[[], Awaitable[None]]

LEAVING: ContextVar[Leaving | None] = ContextVar("compactbot_leaving", default=None)


@runtime_checkable
class MarksTheWire(Protocol):
    """An adapter that awaits `leaving()` right before each of its platform requests leaves."""

    marks_the_wire: Literal[True]


async def leaving() -> None:
    """Called by an adapter just before a request goes out; a no-op outside the outbox."""
    hook = LEAVING.get()
    if hook is not None:
        await hook()

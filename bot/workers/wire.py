"""The moment a reply's request leaves for the platform, after any client-side pacing, and
what became of it there.

The outbox records a send as begun only then: a reply still waiting in a rate limiter when its
worker dies never reached the chat, so another worker may send it; one that left may have. A
request the platform refused unread (a flood wait: Telegram's 429) takes that back while no
earlier request of the same reply has arrived, so a worker dying in the wait loses nothing.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Literal, Protocol, runtime_checkable


class Wire(Protocol):
    """What the outbox is told of one reply's requests, in the order they happen."""

    async def leaving(self) -> None: ...
    async def arrived(self) -> None: ...
    async def refused(self) -> None: ...


WIRE: ContextVar[Wire | None] = ContextVar("compactbot_wire", default=None)


@runtime_checkable
class MarksTheWire(Protocol):
    """An adapter that calls `leaving()` right before each of its platform requests leaves,
    then `arrived()` or `refused()` once the platform answered."""

    marks_the_wire: Literal[True]


async def leaving() -> None:
    """A request is about to go out; a no-op outside the outbox."""
    wire = WIRE.get()
    if wire is not None:
        await wire.leaving()


async def arrived() -> None:
    """The platform accepted the request."""
    wire = WIRE.get()
    if wire is not None:
        await wire.arrived()


async def refused() -> None:
    """The platform refused the request without acting on it (it asked us to wait)."""
    wire = WIRE.get()
    if wire is not None:
        await wire.refused()

"""Building blocks for overnight tests: a settable clock, big sessions, a summarizer on a leash."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime

from compactbot.bot.services import Services
from compactbot.bot.store.base import NewMessage
from compactbot.compression.summarizer import SummaryRequest

BATCH_MESSAGES = 500


@dataclass
class FakeClock:
    """Epoch seconds that only move when a test says so."""

    now: float

    @classmethod
    def at(cls, moment: datetime) -> FakeClock:
        return cls(moment.timestamp())

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


async def fill_session(
    services: Services, chat_key: str, *, messages: int, words: int = 40, author: str = "Bob"
) -> int:
    """Append `messages` user messages of about `words` words each; returns the session id."""
    store = services.store
    await store.upsert_chat(chat_key, chat_key.split(":", 1)[0])
    session = await store.active_session(chat_key)
    for first in range(0, messages, BATCH_MESSAGES):
        rows = []
        for number in range(first, min(first + BATCH_MESSAGES, messages)):
            content = f"[{author}] note {number}: " + " ".join(
                f"word{(number * 7 + i) % 97}" for i in range(words)
            )
            tokens = services.counter.count_message({"role": "user", "content": content})
            rows.append(NewMessage(role="user", content=content, tokens=tokens, author_name=author))
        await store.append_messages(session.id, rows)
    return session.id


@dataclass
class GatedSummarizer:
    """A summarizer that holds each summary until the test releases it."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    calls: int = 0

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        self.started.set()
        await self.release.wait()
        return f"The group exchanged {len(request.turns)} numbered notes."

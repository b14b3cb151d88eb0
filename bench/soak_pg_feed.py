"""What the PostgreSQL soak sends and what answers it: webhook deliveries and the fake model.

Every message carries a tag `T<chat>x<n>T`; the fake model answers a turn with `A<chat>x<n>A`
of the last tagged user message in its request (the turn's question), so each reply names the
question it answers, and summary requests get a short summary.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from tests.fakes.openai_server import Behaviour, Reply
from tests.fakes.telegram_server import FakeTelegram

SECRET = "soak-pg-Secret_7"
HOOK_PATH = "/tg/hook"
RETRY_SECONDS = 0.05
TAG = re.compile(r"T(\d+)x(\d+)T")
ANSWER = re.compile(r"A(\d+)x(\d+)A")
_WORDS = (
    "deploy",
    "friday",
    "lunch",
    "budget",
    "review",
    "the",
    "new",
    "logo",
    "meeting",
    "notes",
    "release",
    "candidate",
    "bug",
    "report",
    "server",
    "room",
    "coffee",
    "machine",
    "quarterly",
    "plan",
    "design",
    "doc",
    "holiday",
    "schedule",
    "hiring",
    "onboarding",
    "docs",
    "database",
    "migration",
    "staging",
    "outage",
    "postmortem",
    "roadmap",
    "customer",
    "call",
    "invoice",
    "travel",
    "booking",
    "weekend",
    "hike",
    "pizza",
    "order",
    "team",
    "offsite",
    "slides",
    "demo",
    "feedback",
)
SUMMARY = (
    "## Topics\n- The group talked about plans, releases and lunch (soak summary {n}).\n"
    "## Key facts and exact values\n- none recorded by the soak's fake summarizer"
)


@dataclass(frozen=True, slots=True)
class Message:
    chat: int
    n: int
    body: str
    addressed: bool


def chat_id_of(chat: int) -> int:
    return -1000 - chat


def chat_of(chat_id: int) -> int:
    return -1000 - chat_id


def messages(chats: int, per_chat: int, addressed_every: int, seed: int) -> list[list[Message]]:
    """Per chat, its messages in order; every `addressed_every`-th addresses the bot."""
    rng = random.Random(f"soak-pg-texts:{seed}")
    out = []
    for c in range(chats):
        row = []
        for n in range(per_chat):
            filler = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(30, 90)))
            addressed = n % addressed_every == addressed_every - 1
            row.append(Message(c, n, f"T{c}x{n}T {filler}", addressed))
        out.append(row)
    return out


class ModelResponder:
    """The fake OpenAI server's responder: a delay per request, seeded random or fixed."""

    def __init__(self, *, max_latency: float = 0.0, fixed_latency: float | None = None, seed: int):
        self._rng = random.Random(f"soak-pg-llm:{seed}")
        self._max = max_latency
        self._fixed = fixed_latency
        self.turns = 0
        self.summaries = 0

    def __call__(self, body: dict[str, Any]) -> Behaviour:
        delay = self._fixed if self._fixed is not None else self._rng.uniform(0.0, self._max)
        messages = body.get("messages") or []
        if len(messages) == 1 and "summar" in str(messages[0].get("content", "")).lower():
            self.summaries += 1
            return Reply(SUMMARY.format(n=self.summaries), delay=delay)
        self.turns += 1
        for message in reversed(messages):
            if message.get("role") == "user":
                found = TAG.findall(str(message.get("content")))
                if found:
                    chat, n = found[-1]
                    return Reply(f"A{chat}x{n}A noted, here is a short answer.", delay=delay)
        return Reply("no question found", delay=delay)


@dataclass(slots=True)
class Deliveries:
    """Webhook POSTs as Telegram makes them; `ids[(chat, n)]` is the message's Telegram id."""

    url: str
    telegram: FakeTelegram
    ids: dict[tuple[int, int], int] = field(default_factory=dict)
    updates: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    tries: int = 0
    refused: int = 0  # non-200 answers and connection errors, each retried
    duplicates: int = 0
    delivered: int = 0
    done_at: float = 0.0

    def update_for(self, message: Message) -> dict[str, Any]:
        key = (message.chat, message.n)
        if key not in self.updates:
            update = self.telegram.group_message(
                message.body,
                chat_id=chat_id_of(message.chat),
                user_id=10 * message.chat + message.n % 4 + 1,
                first_name=("Ann", "Bob", "Cy", "Di")[message.n % 4],
                mention_bot=message.addressed,
            )
            self.updates[key] = update
            self.ids[key] = int(update["message"]["message_id"])
        return self.updates[key]

    async def post(self, session: aiohttp.ClientSession, update: dict[str, Any]) -> None:
        """Until the endpoint answers 200: an update is Telegram's until then."""
        while True:
            self.tries += 1
            try:
                async with session.post(
                    self.url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}
                ) as response:
                    await response.read()
                    if response.status == 200:
                        return
            except (aiohttp.ClientError, TimeoutError):
                pass
            self.refused += 1
            await asyncio.sleep(RETRY_SECONDS)

    async def feed(
        self,
        chats: list[list[Message]],
        *,
        seconds: float,
        duplicate_share: float,
        seed: int,
        on_delivered: Callable[[], None] | None = None,
    ) -> None:
        """Every chat in order, concurrently, spread over about `seconds`; some updates are
        delivered again later (Telegram redelivers what it is not sure arrived)."""
        rng = random.Random(f"soak-pg-feed:{seed}")
        timeout = aiohttp.ClientTimeout(total=30)
        connector = aiohttp.TCPConnector(limit=64)
        async with aiohttp.ClientSession(timeout=timeout, connector=connector) as session:

            async def one_chat(row: list[Message], pace: float, offset: float) -> None:
                await asyncio.sleep(offset)
                start = time.monotonic()
                for index, message in enumerate(row):
                    await self.post(session, self.update_for(message))
                    self.delivered += 1
                    if on_delivered is not None:
                        on_delivered()
                    if index and rng.random() < duplicate_share:
                        again = row[rng.randrange(index)]
                        await self.post(session, self.update_for(again))
                        self.duplicates += 1
                    lag = start + pace * (index + 1) - time.monotonic()
                    if lag > 0:
                        await asyncio.sleep(lag)

            pace = seconds / max(len(chats[0]) if chats else 1, 1)
            await asyncio.gather(
                *(one_chat(row, pace, rng.uniform(0, pace)) for row in chats if row)
            )
        self.done_at = time.monotonic()

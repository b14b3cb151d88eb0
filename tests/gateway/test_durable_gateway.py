"""The durable gateway (worker / ingress) on PostgreSQL: a question's turn commits with it,
commands run where they arrive, in order, and their replies queue behind the chat's turns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pytest

from compactbot.bot.app import App
from compactbot.bot.events import Adapter, ReplyTarget
from compactbot.bot.store import PostgresStore
from compactbot.bot.store.postgres.queue.inbox import InboxJob, PostgresInbox
from compactbot.bot.workers.durable_gateway import DurableGateway, message_from_json
from compactbot.bot.workers.durable_turns import TurnConsumer
from compactbot.bot.workers.outbox import OutboxSender
from compactbot.bot.workers.wire import arrived, leaving, refused
from tests import postgres_server
from tests.harness import RecordingAdapter, group_message, make_config

PLATFORMS = ["test"]
LEASE = 30.0


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[App]:
    server = postgres_server.require_server()
    async with postgres_server.fresh_schema(server) as dsn:
        store = PostgresStore(dsn)
        config = make_config(tmp_path, {"COMPACTBOT_DB": dsn})
        factory = lambda services: DurableGateway(services, store.inbox())  # noqa: E731
        async with App(config, store=store, gateway_factory=factory) as running:
            yield running


def inbox_of(app: App) -> PostgresInbox:
    gateway = app.gateway
    assert isinstance(gateway, DurableGateway)
    return gateway.inbox


async def next_job(inbox: PostgresInbox) -> InboxJob:
    [job] = await inbox.claim("w1", 5, LEASE, PLATFORMS)
    return job


async def test_new_then_a_question_puts_the_question_in_the_new_session(app: App) -> None:
    adapter = RecordingAdapter(admins={"alice"})
    for text in ("@bot first question", "/new", "@bot second question"):
        await app.gateway.handle(group_message(text, author="Alice"), adapter)
    inbox = inbox_of(app)
    first = await next_job(inbox)
    assert first.kind == "turn"
    assert message_from_json(first.payload["message"]).text == "@bot first question"
    assert await inbox.claim("w1", 5, LEASE, PLATFORMS) == []  # one job per chat at a time
    await inbox.finish(first)
    reply = await next_job(inbox)
    assert reply.kind == "send" and reply.payload["target"]["chat_id"] == "g1"
    assert "⛔" not in reply.payload["text"]
    await inbox.finish(reply)
    second = await next_job(inbox)
    assert second.kind == "turn"
    assert second.payload["session_id"] != first.payload["session_id"]
    assert adapter.sent == []  # nothing is said before a worker delivers the outbox


async def answered(app: App, adapter: Adapter) -> tuple[PostgresStore, dict[str, Adapter]]:
    """A question asked and answered by a worker: its reply waits in the outbox."""
    await app.gateway.handle(group_message("@bot hello there"), adapter)
    gateway = app.gateway
    store = app.services.store
    assert isinstance(gateway, DurableGateway) and isinstance(store, PostgresStore)
    adapters: dict[str, Adapter] = {"test": adapter}
    consumer = TurnConsumer(
        gateway.jobs, store.inbox(), adapters, holder="w1", max_jobs=2, lease_seconds=LEASE
    )
    assert await consumer.claim_and_start() == 1
    await consumer.join()
    return store, adapters


async def test_a_worker_answers_and_delivers_through_the_outbox(app: App) -> None:
    adapter = RecordingAdapter(admins={"alice"})
    store, adapters = await answered(app, adapter)
    sender = OutboxSender(store.outbox(), adapters, app.metrics, "w1", lease_seconds=LEASE)
    assert await sender.deliver() == 1
    [(target, text)] = adapter.sent
    assert target.chat_id == "g1" and text
    history = await store.load_history("test:g1")
    assert [m.role for m in history] == ["user", "assistant"]
    assert history[-1].text == text
    assert await store.inbox().unfinished() == 0


async def test_a_stopped_sender_returns_when_woken(app: App) -> None:
    adapter = RecordingAdapter()
    store = app.services.store
    assert isinstance(store, PostgresStore)
    sender = OutboxSender(store.outbox(), {"test": adapter}, app.metrics, "w1", lease_seconds=LEASE)
    wake = asyncio.Event()
    running = asyncio.create_task(sender.run(wake))
    sender.stop()
    wake.set()
    await asyncio.wait_for(running, 5)


@dataclass
class FloodWaitAdapter(RecordingAdapter):
    """Marks the wire as the Telegram adapter does; its reply's request is refused with a
    flood wait, in which it stays until released (where a worker may die)."""

    marks_the_wire: Literal[True] = True
    first_part_arrives: bool = False
    waiting: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    async def send(self, target: ReplyTarget, text: str) -> None:
        if self.first_part_arrives:
            await leaving()
            await arrived()
        await leaving()
        await refused()  # 429: retry after a while
        self.waiting.set()
        await self.release.wait()
        await leaving()
        await arrived()
        await super().send(target, text)


async def _reply_waiting_in_a_flood_wait(app: App, adapter: FloodWaitAdapter) -> str:
    """The reply row's state while its sender waits out the flood wait."""
    store, adapters = await answered(app, adapter)
    sender = OutboxSender(store.outbox(), adapters, app.metrics, "w1", lease_seconds=LEASE)
    delivering = asyncio.create_task(sender.deliver())
    await asyncio.wait_for(adapter.waiting.wait(), 5)
    [state] = (await store.outbox().states()).values()
    adapter.release.set()
    assert await asyncio.wait_for(delivering, 5) == 1
    assert [s for s in (await store.outbox().states()).values()] == ["sent"]
    return state


async def test_a_reply_refused_with_a_flood_wait_is_not_begun_while_it_waits(app: App) -> None:
    # Nothing reached the chat: a worker dying in the wait leaves a claim another takes over.
    assert await _reply_waiting_in_a_flood_wait(app, FloodWaitAdapter()) == "claimed"


async def test_a_reply_whose_first_part_arrived_stays_begun_through_a_flood_wait(app: App) -> None:
    # Part of it is in the chat: never sent again from the start, whatever happens next.
    adapter = FloodWaitAdapter(first_part_arrives=True)
    assert await _reply_waiting_in_a_flood_wait(app, adapter) == "sending"


async def test_a_compaction_notice_goes_through_the_outbox(app: App) -> None:
    # The hard message limit compacts and says so; here that is a reply like any other.
    store = app.services.store
    assert isinstance(store, PostgresStore)
    await store.set_chat_setting("test:g1", "hygiene_hard_message_limit", "40")
    adapter = RecordingAdapter()
    notes = [
        group_message(f"short note {i}", author=f"m{i % 8}", addressed=False) for i in range(45)
    ]
    for note in notes:
        await app.gateway.handle(note, adapter)
    await app.gateway.join()
    events = await store.list_compression_events(chat_key="test:g1")
    assert [e.outcome for e in events] == ["compressed"]
    assert adapter.sent == []  # nothing said directly
    notice = await next_job(inbox_of(app))
    assert notice.kind == "send"
    assert notice.payload["text"].startswith("🧹 This chat reached")

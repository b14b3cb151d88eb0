"""The durable gateway (worker / ingress) on PostgreSQL: a question's turn commits with it,
commands run where they arrive, in order, and their replies queue behind the chat's turns."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.app import App
from bot.durable_gateway import DurableGateway, message_from_json
from bot.durable_turns import TurnConsumer
from bot.events import Adapter
from bot.outbox import OutboxSender
from bot.store import PostgresStore
from bot.store.postgres_inbox import InboxJob, PostgresInbox
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
    await app.gateway.ingest(
        [
            (group_message("@bot first question", author="Alice"), adapter),
            (group_message("/new", author="Alice"), adapter),
            (group_message("@bot second question", author="Alice"), adapter),
        ]
    )
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


async def test_a_worker_answers_and_delivers_through_the_outbox(app: App) -> None:
    adapter = RecordingAdapter(admins={"alice"})
    await app.gateway.ingest([(group_message("@bot hello there"), adapter)])
    gateway = app.gateway
    assert isinstance(gateway, DurableGateway)
    store = app.services.store
    assert isinstance(store, PostgresStore)
    adapters: dict[str, Adapter] = {"test": adapter}
    consumer = TurnConsumer(
        gateway, store.inbox(), adapters, holder="w1", max_jobs=2, lease_seconds=LEASE
    )
    assert await consumer.claim_and_start() == 1
    await consumer.join()
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

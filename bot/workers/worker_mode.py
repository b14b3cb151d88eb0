"""`compactbot worker` and `compactbot ingress`: the roles of several processes on PostgreSQL.

The ingress serves the Telegram webhook and commits each update with its turn; workers claim
turns from the database, answer them, and deliver the outbox (and receive Discord on their
shards). Both refuse SQLite: durable turns are a PostgreSQL feature (`compactbot run` keeps
in-process lanes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import sys
import uuid
from typing import cast

from compactbot.bot import modes, plugins
from compactbot.bot.app import App
from compactbot.bot.events import Adapter
from compactbot.bot.ingress.gateway import Gateway
from compactbot.bot.operators.doctor import doctor_for
from compactbot.bot.plugins import Platform, Role
from compactbot.bot.services import Services
from compactbot.bot.settings.config import Config
from compactbot.bot.store.backends import parse_store_url
from compactbot.bot.workers.durable_gateway import DurableGateway
from compactbot.bot.workers.durable_turns import TurnConsumer
from compactbot.bot.workers.inbox_watch import InboxWatch
from compactbot.bot.workers.outbox import SEND_LEASE_TURN_LEASES, STOP_DRAIN_SECONDS, OutboxSender
from compactbot.bot.workers.wakeup import WorkWakeup

log = logging.getLogger(__name__)

EXIT_USAGE = 2


def holder_name() -> str:
    """This process among the workers, in leases and logs."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


async def worker(config: Config, role: Role) -> int:
    if not _on_postgres(config, "worker"):
        return EXIT_USAGE
    async with App(config, gateway_factory=_durable) as app:
        await app.start_operator_endpoint(doctor=doctor_for(config))
        platforms = plugins.configured_platforms(config, app.gateway, role)
        if not platforms:
            print("compactbot worker: no platform configured (a bot token)", file=sys.stderr)
            return EXIT_USAGE
        work = DurableWork(app, platforms)
        return await modes.serve(app, platforms, [work])


async def ingress(config: Config) -> int:
    if not _on_postgres(config, "ingress"):
        return EXIT_USAGE
    async with App(config, gateway_factory=_durable) as app:
        await app.start_operator_endpoint(doctor=doctor_for(config))
        platforms = plugins.configured_platforms(config, app.gateway, Role("ingress"))
        if not platforms:
            print("compactbot ingress: no Telegram bot token (TELEGRAM_BOT_TOKEN)", file=sys.stderr)
            return EXIT_USAGE
        # Scheduled jobs run in workers (the leader among them), not here.
        return await modes.serve(app, platforms, scheduled=False)


class DurableWork:
    """The worker's background part: wake-ups, the turn consumer and the outbox sender."""

    def __init__(self, app: App, platforms: list[Platform]) -> None:
        gateway = app.gateway
        assert isinstance(gateway, DurableGateway)
        store = app.services.postgres
        assert store is not None
        self._store = store
        self._gateway = gateway
        # Every platform a worker starts is an Adapter too (Telegram, Discord).
        self._adapters = {p.name: cast(Adapter, p) for p in platforms}
        self._holder = holder_name()
        self._max_jobs = app.config.gateway.max_concurrent_chats
        self._lease_seconds = app.config.gateway.turn_lease_seconds
        self._metrics = app.metrics
        self._readiness = app.readiness
        self._wakeup: WorkWakeup | None = None
        self._sender: OutboxSender | None = None
        self._sends_wake = asyncio.Event()
        self._consumer_task: asyncio.Task[None] | None = None
        self._sender_task: asyncio.Task[None] | None = None
        self._watch_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        inbox = self._store.inbox()
        watch = InboxWatch(inbox, list(self._adapters), self._metrics)
        self._readiness.add(watch)
        self._watch_task = asyncio.create_task(watch.run(), name="inbox-watch")
        wakeup = WorkWakeup(self._store.dsn, await inbox.channel())
        turns_wake, sends_wake = wakeup.event(), wakeup.event()
        consumer = TurnConsumer(
            self._gateway.jobs,
            inbox,
            self._adapters,
            holder=self._holder,
            max_jobs=self._max_jobs,
            lease_seconds=self._lease_seconds,
            on_finished=sends_wake,
        )
        sender = OutboxSender(
            self._store.outbox(),
            self._adapters,
            self._metrics,
            self._holder,
            lease_seconds=SEND_LEASE_TURN_LEASES * self._lease_seconds,
        )
        wakeup.start()
        self._wakeup, self._sender, self._sends_wake = wakeup, sender, sends_wake
        self._consumer_task = asyncio.create_task(consumer.run(turns_wake), name="turn-consumer")
        self._sender_task = asyncio.create_task(sender.run(sends_wake), name="outbox-sender")
        log.info("worker %s: answering turns (up to %d at once)", self._holder, self._max_jobs)

    async def stop(self) -> None:
        """Hand running turns back, let a send in progress finish, then stop listening."""
        if self._watch_task is not None:
            self._watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch_task
        if self._consumer_task is not None:
            self._consumer_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._consumer_task
        if self._sender is not None and self._sender_task is not None:
            self._sender.stop()
            self._sends_wake.set()
            try:
                await asyncio.wait_for(self._sender_task, STOP_DRAIN_SECONDS)
            except (TimeoutError, asyncio.CancelledError):
                log.warning("worker %s: a send did not finish before shutdown", self._holder)
        if self._wakeup is not None:
            await self._wakeup.stop()


def _durable(services: Services) -> Gateway:
    store = services.postgres
    assert store is not None  # _on_postgres checked the URL
    return DurableGateway(services, store.inbox())


def _on_postgres(config: Config, command: str) -> bool:
    if parse_store_url(config.storage.database).backend == "postgresql":
        return True
    print(
        f"compactbot {command}: needs PostgreSQL (COMPACTBOT_DB=postgresql://…);"
        " on SQLite use `compactbot run`",
        file=sys.stderr,
    )
    return False

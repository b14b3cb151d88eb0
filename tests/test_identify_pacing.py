"""Discord identifies from several worker processes are spaced out through PostgreSQL."""

from __future__ import annotations

import asyncio
import time

from compactbot.bot.workers.identify_pacing import IdentifyPacing
from tests import postgres_server

INTERVAL = 0.5


async def test_a_second_workers_identify_waits_out_the_firsts_interval() -> None:
    server = postgres_server.require_server()
    async with postgres_server.fresh_schema(server) as dsn:
        first, second = IdentifyPacing(dsn, interval_seconds=INTERVAL), IdentifyPacing(dsn)
        try:
            started = time.monotonic()
            await first.before_identify()
            await second.before_identify()
            # A lower bound only: the second cannot get the slot before the first lets it go.
            assert time.monotonic() - started >= INTERVAL
        finally:
            await first.close()
            await second.close()


async def test_closing_frees_the_slot_at_once() -> None:
    server = postgres_server.require_server()
    async with postgres_server.fresh_schema(server) as dsn:
        first = IdentifyPacing(dsn, interval_seconds=3600)
        second = IdentifyPacing(dsn, interval_seconds=INTERVAL)
        try:
            await first.before_identify()
            await first.close()  # a stopping (or dead) worker holds nobody up
            await asyncio.wait_for(second.before_identify(), 10)
        finally:
            await second.close()

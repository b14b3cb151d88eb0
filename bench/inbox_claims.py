"""Throughput of the durable turn inbox: enqueue with the message, then claim and finish.

`python -m bench.inbox_claims [--chats N] [--per-chat M] [--workers W]` on a fresh schema of the
test PostgreSQL (COMPACTBOT_TEST_PG_DSN): the messages are ingested with their turns, then W
consumers (each its own pool, as separate processes would have) claim and finish every job with
one outbox row. Prints both rates; exit status 1 when a chat's jobs finished out of order.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from compactbot.bot.store import PostgresStore
from compactbot.bot.store.base import InboxEntry, IngestItem, NewMessage
from compactbot.bot.store.postgres.queue.inbox import InboxJob, Say
from tests import postgres_server

INGEST_BATCH = 100
CLAIM_BATCH = 16
LEASE_SECONDS = 30.0
IDLE_SECONDS = 0.005


def questions(chats: int, per_chat: int) -> list[IngestItem]:
    return [
        IngestItem(
            "telegram",
            f"{chat}-{n}",
            f"telegram:{chat}",
            None,
            NewMessage(role="user", content=f"question {n}", tokens=3),
            enqueue=InboxEntry(f"telegram:{chat}|", {"n": n}),
        )
        for n in range(per_chat)
        for chat in range(chats)
    ]


async def consume(store: PostgresStore, name: str, done: list[tuple[str, int]], total: int) -> None:
    inbox = store.inbox()
    while len(done) < total:
        jobs = await inbox.claim(name, CLAIM_BATCH, LEASE_SECONDS, ["telegram"])
        if not jobs:
            await asyncio.sleep(IDLE_SECONDS)  # the other consumers hold every free chat
            continue

        async def finish(job: InboxJob) -> None:
            said = Say("telegram", {"chat_id": job.chat_key}, "answer")
            if await inbox.finish(job, says=[said]):
                done.append((job.chat_key, int(job.payload["n"])))

        await asyncio.gather(*(finish(job) for job in jobs))


async def run(chats: int, per_chat: int, workers: int) -> bool:
    dsn_base = postgres_server.base_dsn()
    async with postgres_server.fresh_schema(dsn_base) as dsn:
        stores = [PostgresStore(dsn) for _ in range(workers)]
        for store in stores:
            await store.open()
        try:
            items = questions(chats, per_chat)
            started = time.perf_counter()
            for i in range(0, len(items), INGEST_BATCH):
                await stores[0].ingest(items[i : i + INGEST_BATCH])
            ingested = time.perf_counter()
            done: list[tuple[str, int]] = []
            await asyncio.gather(
                *(consume(store, f"w{i}", done, len(items)) for i, store in enumerate(stores))
            )
            finished = time.perf_counter()
        finally:
            for store in stores:
                await store.close()
    per_chat_order: dict[str, list[int]] = {}
    for chat, n in done:
        per_chat_order.setdefault(chat, []).append(n)
    in_order = all(ns == list(range(per_chat)) for ns in per_chat_order.values())
    total = len(items)
    print(
        f"{total} questions in {chats} chats, {workers} consumers: "
        f"ingest+enqueue {total / (ingested - started):.0f}/s, "
        f"claim+finish {total / (finished - ingested):.0f} jobs/s, "
        f"FIFO per chat {'kept' if in_order else 'BROKEN'}"
    )
    return in_order


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inbox_claims")
    parser.add_argument("--chats", type=int, default=50)
    parser.add_argument("--per-chat", type=int, default=40)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    return 0 if asyncio.run(run(args.chats, args.per_chat, args.workers)) else 1


if __name__ == "__main__":
    sys.exit(main())

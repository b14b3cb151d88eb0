"""Chaos soak on PostgreSQL: 3 `compactbot worker`, one `compactbot ingress`, SIGKILLs at random.

The fake Bot API takes the workers' sends; webhook POSTs go to the ingress (retried until 200,
some delivered twice on purpose); the fake model answers after a seeded random 0–500 ms, and a
small context window makes sessions compact again and again. A worker is SIGKILLed every few
seconds (the leader every few kills, a compaction's holder when there is one) and restarted at
once. Then the database and the fake's log are checked (bench/soak_pg_checks.py), and the
throughput with 1, 2 and 3 workers is measured at a fixed model latency without kills.
`python -m bench.soak_pg [--quick]` (`make soak-pg`); exit status 1 when any check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import random
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg

from bench.soak_pg_checks import answered_keys, verify
from bench.soak_pg_feed import Deliveries, ModelResponder, messages
from bench.soak_pg_fleet import Fleet, cpu_seconds, fleet, poll_until
from bench.soak_pg_kills import kill_loop, leader_appears
from bench.soak_pg_plan import FULL, QUICK, SEED, Chaos, Plan, Throughput
from bench.soak_pg_report import render
from bench.soak_pg_setup import Servers, database, servers
from compactbot.bot.store import PostgresStore

PROGRESS_SECONDS = 15.0
LATE_DUPLICATE_SECONDS = 1.0

log = logging.getLogger("bench.soak_pg")


async def chaos(plan: Plan, workdir: Path) -> Chaos:
    out = Chaos(plan)
    rng = random.Random(f"soak-pg-kills:{SEED}")
    chats = messages(plan.chats, plan.per_chat, plan.addressed_every, SEED)
    out.model = ModelResponder(max_latency=plan.max_latency, seed=SEED)
    started = time.monotonic()
    async with (
        database() as dsn,
        PostgresStore(dsn) as store,
        _pool(dsn) as pool,
        servers(
            workdir,
            dsn,
            out.model,
            context_length=plan.context_length,
            protect_last_n=plan.protect_last_n,
            turn_lease_seconds=plan.turn_lease_seconds,
        ) as edge,
        fleet(workdir, edge.env) as procs,
    ):
        out.deliveries = deliveries = Deliveries(edge.hook_url, edge.telegram)
        try:
            await _start(procs, plan.workers)
            out.first_leader = await leader_appears(procs)
            if not out.first_leader:
                log.warning("no worker logged that it leads: is leadership wired to workers?")
            feed_started = time.monotonic()
            feeding = asyncio.create_task(
                deliveries.feed(
                    chats,
                    seconds=plan.feed_seconds,
                    duplicate_share=plan.duplicate_share,
                    seed=SEED,
                )
            )
            progress = asyncio.create_task(_progress(out, edge, pool, started))
            try:
                await kill_loop(procs, plan, rng, pool, feeding, out, started)
                await feeding
                out.feed_seconds = deliveries.done_at - feed_started
                await procs.until_ready(procs.alive("worker"))
                drained = await _drained(pool, plan.drain_seconds)
            finally:
                progress.cancel()
            if not drained:
                out.error = f"queues not drained {plan.drain_seconds:.0f} s after the last kill"
            await asyncio.sleep(LATE_DUPLICATE_SECONDS)  # a duplicate send would show up now
            out.wall = time.monotonic() - feed_started
            for proc in [p for p in procs.procs if p.alive]:
                out.exit_codes.append(await procs.stop(proc))
            out.verdict = await verify(store, pool, chats, deliveries.ids, edge.telegram.sent_log)
        except Exception as exc:
            out.error = f"{type(exc).__name__}: {exc}"
            log.error("soak broke: %s\n%s", out.error, procs.tail())
    return out


async def _start(procs: Fleet, workers: int) -> None:
    ingress = await procs.spawn("ingress")
    await procs.until_ready([ingress])
    started = [await procs.spawn("worker") for _ in range(workers)]
    await procs.until_ready(started)


async def _drained(pool: asyncpg.Pool, seconds: float) -> bool:
    """Wait until no turn is open and no reply waits to be sent (a claimed one waits too: its
    worker may still be pacing it)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        async with pool.acquire() as conn:
            inbox = await conn.fetchval("SELECT count(*) FROM turn_inbox WHERE state <> 'done'")
            outbox = await conn.fetchval(
                "SELECT count(*) FROM reply_outbox WHERE state IN ('pending', 'claimed', 'sending')"
            )
        if inbox == 0 and outbox == 0:
            return True
        await asyncio.sleep(0.25)
    return False


async def _progress(out: Chaos, edge: Servers, pool: asyncpg.Pool, started: float) -> None:
    while True:
        await asyncio.sleep(PROGRESS_SECONDS)
        assert out.deliveries is not None
        async with pool.acquire() as conn:
            inbox = await conn.fetchval("SELECT count(*) FROM turn_inbox WHERE state <> 'done'")
        answered = len(answered_keys(out.deliveries.ids, edge.telegram.sent_log))
        print(
            f"[{time.monotonic() - started:5.0f} s] delivered {out.deliveries.delivered},"
            f" answered {answered}, open turns {inbox}, kills {len(out.kills)}",
            file=sys.stderr,
            flush=True,
        )


@contextlib.asynccontextmanager
async def _pool(dsn: str) -> AsyncIterator[asyncpg.Pool]:
    pool = await asyncpg.create_pool(dsn, min_size=1, max_size=2)
    try:
        yield pool
    finally:
        await pool.close()


async def throughput(plan: Plan, workers: int, workdir: Path) -> Throughput:
    """Turns queued first (no worker running), then `workers` started together; the answer
    rate once all of them are ready."""
    chats = messages(plan.throughput_chats, plan.throughput_turns, 1, SEED + workers)
    responder = ModelResponder(fixed_latency=plan.fixed_latency, seed=SEED)
    total = plan.throughput_chats * plan.throughput_turns
    async with (
        database() as dsn,
        servers(
            workdir,
            dsn,
            responder,
            context_length=8_000,
            protect_last_n=plan.protect_last_n,
            turn_lease_seconds=plan.turn_lease_seconds,
        ) as edge,
        fleet(workdir, edge.env) as procs,
    ):
        ingress = await procs.spawn("ingress")
        await procs.until_ready([ingress])
        deliveries = Deliveries(edge.hook_url, edge.telegram)
        await deliveries.feed(chats, seconds=0.0, duplicate_share=0.0, seed=SEED)
        started = [await procs.spawn("worker") for _ in range(workers)]
        await procs.until_ready(started)
        ready_at = time.monotonic()
        cpu_before = sum(cpu_seconds(p.pid) for p in started)
        await poll_until(lambda: len(edge.telegram.sent_log) >= total, plan.drain_seconds)
        cpu = sum(cpu_seconds(p.pid) for p in started) - cpu_before
        sends = [c.at for c in edge.telegram.calls_to("sendMessage")]
        calls = [c.at for c in edge.telegram.calls]
        await procs.stop_all()
    window = [at for at in sends if at >= ready_at]
    seconds = (max(window) - ready_at) if window else 0.0
    api_calls = sum(ready_at <= at <= ready_at + seconds for at in calls)
    return Throughput(workers, total, seconds, len(window), cpu, api_calls)


async def run(plan: Plan) -> tuple[Chaos, list[Throughput]]:
    with tempfile.TemporaryDirectory(prefix="soak-pg-") as tmp:
        workdir = Path(tmp)
        (workdir / "chaos").mkdir()
        outcome = await chaos(plan, workdir / "chaos")
        rates = []
        for workers in plan.throughput_workers:
            (workdir / f"rate-{workers}").mkdir()
            rates.append(await throughput(plan, workers, workdir / f"rate-{workers}"))
    return outcome, rates


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak_pg", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="a small smoke run")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # A killed worker drops its requests to the fakes mid-way: not news.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    begun = time.monotonic()
    outcome, rates = asyncio.run(run(QUICK if args.quick else FULL))
    section = render(outcome, rates)
    print(f"## {section.title}\n")
    print("\n".join(section.body))
    for target in section.targets:
        state = "met" if target.met else "NOT met"
        print(f"- {target.name}: {target.measured} (target {target.wanted}) — {state}")
    print(f"\n(whole run {time.monotonic() - begun:.0f} s)")
    return 0 if all(t.met for t in section.targets) else 1


if __name__ == "__main__":
    sys.exit(main())

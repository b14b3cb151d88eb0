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
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg

from bench.soak_pg_checks import Verdict, answered_keys, verify
from bench.soak_pg_feed import Deliveries, ModelResponder, messages
from bench.soak_pg_fleet import Fleet, Proc, fleet, poll_until
from bench.soak_pg_report import render
from bench.soak_pg_setup import Servers, database, servers
from bot.store import PostgresStore

LEADER_WAIT_SECONDS = 15.0
PROGRESS_SECONDS = 15.0
LATE_DUPLICATE_SECONDS = 1.0
SEED = 20261214

log = logging.getLogger("bench.soak_pg")


@dataclass(frozen=True, slots=True)
class Plan:
    chats: int
    per_chat: int
    feed_seconds: float  # the deliveries are spread over about this long
    min_kills: int
    kill_every: tuple[float, float] = (2.0, 5.0)
    leader_kill_every: int = 4  # every this-many-th kill (the first included) hits the leader
    workers: int = 3
    addressed_every: int = 5
    duplicate_share: float = 0.05
    max_latency: float = 0.5
    context_length: int = 4_000
    drain_seconds: float = 240.0
    # Throughput at a fixed model latency, no kills: chats × turns per chat, per worker count.
    throughput_workers: tuple[int, ...] = (1, 2, 3)
    throughput_chats: int = 200
    throughput_turns: int = 3
    fixed_latency: float = 0.2


FULL = Plan(chats=200, per_chat=50, feed_seconds=100.0, min_kills=24)
QUICK = Plan(
    chats=20,
    per_chat=10,
    feed_seconds=12.0,
    min_kills=4,
    kill_every=(1.5, 3.0),
    leader_kill_every=2,
    drain_seconds=180.0,
    throughput_workers=(1, 3),
    throughput_chats=30,
    throughput_turns=2,
)


@dataclass(frozen=True, slots=True)
class Kill:
    at: float  # seconds into the run
    why: str  # leader | compaction | random
    turns: int  # turn jobs it held
    compactions: int  # compaction leases it held
    sends: int  # outbox rows it was sending


@dataclass(slots=True)
class Chaos:
    plan: Plan
    kills: list[Kill] = field(default_factory=list)
    leader_gaps: list[float] = field(default_factory=list)
    leaderless: int = 0  # leader kills after which no new leader showed up in time
    first_leader: bool = False
    verdict: Verdict | None = None
    deliveries: Deliveries | None = None
    model: ModelResponder | None = None
    exit_codes: list[int] = field(default_factory=list)
    feed_seconds: float = 0.0
    wall: float = 0.0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Throughput:
    workers: int
    turns: int
    seconds: float  # from every worker ready to the last answer
    answered: int  # answers sent in that window

    @property
    def rate(self) -> float:
        return self.answered / self.seconds if self.seconds > 0 else 0.0


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
        servers(workdir, dsn, out.model, plan.context_length) as edge,
        fleet(workdir, edge.env) as procs,
    ):
        out.deliveries = deliveries = Deliveries(edge.hook_url, edge.telegram)
        try:
            await _start(procs, plan.workers)
            out.first_leader = await _leader_appears(procs)
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
                await _kill_loop(procs, plan, rng, pool, feeding, out, started)
                await feeding
                out.feed_seconds = deliveries.done_at - started
                await procs.until_ready(procs.alive("worker"))
                drained = await _drained(pool, plan.drain_seconds)
            finally:
                progress.cancel()
            if not drained:
                out.error = f"queues not drained {plan.drain_seconds:.0f} s after the last kill"
            await asyncio.sleep(LATE_DUPLICATE_SECONDS)  # a duplicate send would show up now
            out.wall = time.monotonic() - started
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


async def _leader_appears(procs: Fleet) -> bool:
    deadline = time.monotonic() + LEADER_WAIT_SECONDS
    while procs.leader() is None:
        if time.monotonic() > deadline:
            log.warning("no worker logged %r: leadership is not wired to the workers", "leading")
            return False
        await asyncio.sleep(0.05)
    return True


async def _kill_loop(
    procs: Fleet,
    plan: Plan,
    rng: random.Random,
    pool: asyncpg.Pool,
    feeding: asyncio.Task[None],
    out: Chaos,
    started: float,
) -> None:
    """Kill a worker every few seconds until the feed is done and enough kills were made."""
    while not feeding.done() or len(out.kills) < plan.min_kills:
        await asyncio.sleep(rng.uniform(*plan.kill_every))
        procs.scan()
        ready = [p for p in procs.alive("worker") if p.ready]
        if not ready:
            continue
        held = await _holdings(pool)
        victim, why = _choose(ready, held, len(out.kills), plan, rng)
        turns, compactions, sends = held.get(victim.pid, (0, 0, 0))
        killed_at = time.time()
        await procs.kill(victim)
        out.kills.append(Kill(time.monotonic() - started, why, turns, compactions, sends))
        await procs.spawn("worker")
        if why == "leader":
            gap = await _new_leader(procs, victim, killed_at)
            if gap is None:
                out.leaderless += 1
            else:
                out.leader_gaps.append(gap)


def _choose(
    ready: list[Proc],
    held: dict[int, tuple[int, int, int]],
    index: int,
    plan: Plan,
    rng: random.Random,
) -> tuple[Proc, str]:
    leader = next((p for p in ready if p.leading), None)
    if leader is not None and index % plan.leader_kill_every == 0:
        return leader, "leader"
    compacting = [p for p in ready if held.get(p.pid, (0, 0, 0))[1]]
    if compacting and rng.random() < 0.5:
        return rng.choice(compacting), "compaction"
    return rng.choice(ready), "random"


async def _holdings(pool: asyncpg.Pool) -> dict[int, tuple[int, int, int]]:
    """Per worker pid: turn jobs, compaction leases and sends it holds (holders are
    `host:pid:…`)."""
    queries = (
        "SELECT split_part(holder, ':', 2) AS pid, count(*) AS n FROM turn_inbox"
        " WHERE state = 'doing' GROUP BY 1",
        "SELECT split_part(holder, ':', 2) AS pid, count(*) AS n FROM compression_locks GROUP BY 1",
        "SELECT split_part(holder, ':', 2) AS pid, count(*) AS n FROM reply_outbox"
        " WHERE state = 'sending' GROUP BY 1",
    )
    held: dict[int, list[int]] = {}
    async with pool.acquire() as conn:
        for column, sql in enumerate(queries):
            for r in await conn.fetch(sql):
                if str(r["pid"]).isdigit():
                    held.setdefault(int(r["pid"]), [0, 0, 0])[column] = int(r["n"])
    return {pid: (a, b, c) for pid, (a, b, c) in held.items()}


async def _new_leader(procs: Fleet, victim: Proc, killed_at: float) -> float | None:
    """Seconds from the leader's SIGKILL until another worker logged that it leads."""
    deadline = time.monotonic() + LEADER_WAIT_SECONDS
    while time.monotonic() < deadline:
        procs.scan()
        taken = [
            t for p in procs.procs if p is not victim for t in p.led_at if t >= killed_at - 0.001
        ]
        if taken:
            return max(min(taken) - killed_at, 0.0)
        await asyncio.sleep(0.05)
    return None


async def _drained(pool: asyncpg.Pool, seconds: float) -> bool:
    """Wait until no turn is open and no reply waits to be sent."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        async with pool.acquire() as conn:
            inbox = await conn.fetchval("SELECT count(*) FROM turn_inbox WHERE state <> 'done'")
            outbox = await conn.fetchval(
                "SELECT count(*) FROM reply_outbox WHERE state IN ('pending', 'sending')"
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
        servers(workdir, dsn, responder, 8_000) as edge,
        fleet(workdir, edge.env) as procs,
    ):
        ingress = await procs.spawn("ingress")
        await procs.until_ready([ingress])
        deliveries = Deliveries(edge.hook_url, edge.telegram)
        await deliveries.feed(chats, seconds=0.0, duplicate_share=0.0, seed=SEED)
        started = [await procs.spawn("worker") for _ in range(workers)]
        await procs.until_ready(started)
        ready_at = time.monotonic()
        await poll_until(lambda: len(edge.telegram.sent_log) >= total, plan.drain_seconds)
        sends = [c.at for c in edge.telegram.calls_to("sendMessage")]
        await procs.stop_all()
    window = [at for at in sends if at >= ready_at]
    seconds = (max(window) - ready_at) if window else 0.0
    return Throughput(workers, total, seconds, len(window))


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

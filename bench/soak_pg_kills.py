"""The soak's SIGKILLs: a worker every few seconds, aimed at the leader, a compaction or a turn.

Each kill picks what it aims at first, then waits a moment for a worker holding it (the
database's leases name their holder `host:pid:…`), so kills land mid-turn and mid-compaction
even when the load is light. A killed worker is reaped and replaced at once; after a leader's
kill the time until another worker logs that it leads is measured.
"""

from __future__ import annotations

import asyncio
import random
import time

import asyncpg

from bench.soak_pg_fleet import POLL_SECONDS, Fleet, Proc
from bench.soak_pg_plan import Chaos, Kill, Plan

LEADER_WAIT_SECONDS = 15.0
# How long a kill waits for a worker holding what it aims at before it takes anyone.
AIM_SECONDS = 3.0
AIMS = ("compaction", "turn", "random")
AIM_WEIGHTS = (0.4, 0.4, 0.2)
_HOLDINGS_SQL = (
    "SELECT split_part(holder, ':', 2) AS pid, count(*) AS n FROM turn_inbox"
    " WHERE state = 'doing' GROUP BY 1",
    "SELECT split_part(holder, ':', 2) AS pid, count(*) AS n FROM compression_locks GROUP BY 1",
    "SELECT split_part(holder, ':', 2) AS pid, count(*) AS n FROM reply_outbox"
    " WHERE state = 'sending' GROUP BY 1",
)
Held = dict[int, tuple[int, int, int]]  # pid -> (turn jobs, compaction leases, sends)


async def kill_loop(
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
        index = len(out.kills)
        aim = "leader" if index % plan.leader_kill_every == 0 else _pick(rng)
        chosen = await _aim(procs, pool, plan, aim, rng)
        if chosen is None:
            continue
        victim, why, (turns, compactions, sends) = chosen
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


def _pick(rng: random.Random) -> str:
    return rng.choices(AIMS, AIM_WEIGHTS)[0]


async def _aim(
    procs: Fleet, pool: asyncpg.Pool, plan: Plan, aim: str, rng: random.Random
) -> tuple[Proc, str, tuple[int, int, int]] | None:
    """A ready worker holding what `aim` names, else (after AIM_SECONDS) any ready one."""
    deadline = time.monotonic() + AIM_SECONDS
    while True:
        procs.scan()
        ready = [p for p in procs.alive("worker") if p.ready]
        held = await holdings(pool) if ready else {}
        if plan.spare_senders:
            ready = [p for p in ready if not held.get(p.pid, (0, 0, 0))[2]]
        late = time.monotonic() > deadline
        if ready:
            found = _matching(ready, held, aim)
            if found or late:
                victim = rng.choice(found) if found else rng.choice(ready)
                return victim, aim if found else "random", held.get(victim.pid, (0, 0, 0))
            if aim == "leader" and not any(p.leading for p in procs.alive("worker")):
                aim = _pick(rng)  # no leader to aim at (yet): the next-best target
        elif late:
            return None
        await asyncio.sleep(POLL_SECONDS)


def _matching(ready: list[Proc], held: Held, aim: str) -> list[Proc]:
    if aim == "leader":
        return [p for p in ready if p.leading]
    if aim == "random":
        return ready
    column = 1 if aim == "compaction" else 0
    return [p for p in ready if held.get(p.pid, (0, 0, 0))[column]]


async def holdings(pool: asyncpg.Pool) -> Held:
    """Per worker pid: the turn jobs, compaction leases and sends it holds now."""
    held: dict[int, list[int]] = {}
    async with pool.acquire() as conn:
        for column, sql in enumerate(_HOLDINGS_SQL):
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
        await asyncio.sleep(POLL_SECONDS)
    return None


async def leader_appears(procs: Fleet) -> bool:
    """Whether some worker leads within LEADER_WAIT_SECONDS of the start."""
    deadline = time.monotonic() + LEADER_WAIT_SECONDS
    while procs.leader() is None:
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(POLL_SECONDS)
    return True

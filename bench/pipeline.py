"""The whole pipeline's overhead per message: `gateway.handle` on the real App with a
zero-latency fake LLM, at 1, 32 and 100 concurrent chats, saturated and paced.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
import tracemalloc
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.report import Section, ms, quantile, spread, table
from bench.service import Adapter, FakeLLM, inbound, running_service
from bench.workloads import NAMES
from compactbot.bot.store.sqlite import SqliteStore

CONCURRENCY = (1, 32, 100)
CONTEXT_TOKENS = 32_000
ADDRESSED_EVERY = 5  # one message in five addresses the bot
# A busy group chat: a message every half second on average, in every chat at once.
PACED_RATE_PER_CHAT = 2.0
# Issue 17's targets: paced latency, and saturated throughput with every message
# acknowledged after its commit, without and with one message in five answered.
PACED_P50_SECONDS = 0.001
PACED_P99_SECONDS = 0.010
OBSERVE_MSGS_PER_SECOND = 5_000
ANSWERED_MSGS_PER_SECOND = 1_500


@dataclass(slots=True)
class Results:
    runs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # closed loop, per level
    observe: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # none addressed
    peak_mb: dict[int, float] = field(default_factory=dict)
    paced: dict[int, list[dict[str, Any]]] = field(default_factory=dict)


async def measure(
    results: Results,
    directory: Path,
    *,
    messages: int,
    reps: int,
    paced_seconds: float,
    paced_reps: int,
) -> None:
    """Closed-loop runs at each concurrency, one traced run for memory, then paced runs."""
    for chats in CONCURRENCY:
        per_chat = max(10, messages // chats)
        for rep in range(reps):
            results.runs.setdefault(chats, []).append(
                await _level(directory / f"c{chats}-{rep}", chats, per_chat)
            )
        traced = await _level(directory / f"c{chats}-traced", chats, per_chat, trace=True)
        results.peak_mb[chats] = traced["peak_mb"]
        if chats > 1:
            for rep in range(reps):
                results.observe.setdefault(chats, []).append(
                    await _level(directory / f"c{chats}-observe-{rep}", chats, per_chat, every=0)
                )
            for rep in range(paced_reps):
                results.paced.setdefault(chats, []).append(
                    await _level(
                        directory / f"c{chats}-paced-{rep}",
                        chats,
                        0,
                        paced_seconds=paced_seconds,
                    )
                )


async def _level(
    directory: Path,
    chats: int,
    per_chat: int,
    *,
    trace: bool = False,
    paced_seconds: float = 0.0,
    every: int = ADDRESSED_EVERY,
) -> dict[str, Any]:
    """`chats` chats talking at once through `gateway.handle`.

    Closed loop (default): each chat sends its next message as soon as the previous one is
    handled (or answered, when it addressed the bot), which saturates the service. Paced: each
    chat's messages arrive at random (Poisson, PACED_RATE_PER_CHAT a second) for
    `paced_seconds`, whether or not earlier ones were answered, as people do.
    """
    await asyncio.to_thread(directory.mkdir, parents=True)
    llm = FakeLLM()
    adapter = Adapter()
    observed: list[float] = []
    addressed: list[float] = []
    pending: list[asyncio.Task[None]] = []
    rng = random.Random(f"pipeline:{chats}:{paced_seconds}")
    people = NAMES[:12]
    async with running_service(directory, context_length=CONTEXT_TOKENS, llm=llm) as (
        app,
        _endpoint,
    ):
        gateway = app.gateway

        async def send(c: int, m: int) -> None:
            message_id = str(m)
            is_addressed = bool(every) and m % every == every - 1
            text = f"message {m} in chat {c}: " + " ".join(
                rng.choices(("ok", "sure", "tomorrow", "lunch", "deploy", "why"), k=12)
            )
            message = inbound(
                f"c{c}", people[m % len(people)], text, message_id, addressed=is_addressed
            )
            waiter = adapter.expect(f"c{c}", message_id) if is_addressed else None
            start = time.perf_counter()
            await gateway.handle(message, adapter)
            if waiter is None:
                observed.append(time.perf_counter() - start)
            else:
                addressed.append(await waiter - start)

        async def closed(c: int) -> None:
            for m in range(per_chat):
                await send(c, m)

        async def paced(c: int) -> None:
            loop = asyncio.get_running_loop()
            deadline = loop.time() + paced_seconds
            m = 0
            while True:
                delay = rng.expovariate(PACED_RATE_PER_CHAT)
                if loop.time() + delay >= deadline:
                    return
                await asyncio.sleep(delay)
                pending.append(asyncio.create_task(send(c, m)))
                m += 1

        if trace:
            tracemalloc.start()
        begin = time.perf_counter()
        await asyncio.gather(*((paced if paced_seconds else closed)(c) for c in range(chats)))
        await asyncio.gather(*pending)
        await gateway.join()
        wall = time.perf_counter() - begin
        # SQLite indexes for search behind the writer: what catching up costs after the run.
        store = app.services.store
        index_begin = time.perf_counter()
        indexed = await store.index_pending() if isinstance(store, SqliteStore) else 0
        index_wall = time.perf_counter() - index_begin
        peak = 0.0
        if trace:
            peak = tracemalloc.get_traced_memory()[1] / 1e6
            tracemalloc.stop()
    everything = observed + addressed
    return {
        "messages": len(everything),
        "wall": wall,
        "index_wall": index_wall,
        "indexed_after": indexed,
        "all": everything,
        "observed": observed,
        "addressed": addressed,
        "peak_mb": peak,
        "replies": len(adapter.sent),
    }


def render(results: Results, paced_seconds: float) -> list[str]:
    """The tables, as markdown lines for the speed section."""
    s = Section("")
    s.add(
        "Whole pipeline: `gateway.handle` on the real App (SqliteStore, gateway, runner, "
        "compactor; summaries over HTTP to a local fake endpoint) with a zero-latency fake LLM, "
        f"{CONTEXT_TOKENS // 1000}K window; one message in {ADDRESSED_EVERY} addresses "
        "the bot. Latency is from `handle()` to `handle()` returning (observed messages) or to "
        "the reply reaching the adapter (addressed ones), p50 / p99.",
        "",
        "*Saturated* (closed loop): each chat sends its next message as soon as the previous one "
        "is handled or answered, so the service never idles and each message queues behind the "
        "other chats' work (one event loop, one SQLite writer). Peak memory from a second, traced "
        "run of the same load.",
        "",
    )
    rows = []
    for chats, runs in results.runs.items():
        rows.append(
            [
                chats,
                f"{len(runs)} × {runs[0]['messages']:,}",
                _p50_p99(runs, "all"),
                _p50_p99(runs, "observed"),
                _p50_p99(runs, "addressed"),
                spread([r["messages"] / r["wall"] for r in runs], _per_second),
                spread([r["wall"] / r["messages"] for r in runs]),
                f"{results.peak_mb.get(chats, 0.0):.1f} MB",
            ]
        )
    s.add(
        *table(
            [
                "concurrent chats",
                "runs × messages",
                "all: p50 (min–max over runs) / p99",
                "observed",
                "addressed",
                "throughput",
                "wall time per message",
                "peak traced memory",
            ],
            rows,
        )
    )
    s.add(
        "*Saturated, observe mode*: the same closed loop with no message addressing the bot "
        "(each is deduplicated, stored and acknowledged after its commit). Search indexing "
        "runs behind the writer, between bursts; the last columns add the time the index then "
        "takes to catch up with the run (rows still unindexed when it ended):",
        "",
        *table(
            [
                "concurrent chats",
                "runs × messages",
                "p50 / p99",
                "throughput",
                "with the index caught up",
                "rows left to index",
            ],
            [
                [
                    chats,
                    f"{len(runs)} × {runs[0]['messages']:,}",
                    _p50_p99(runs, "all"),
                    spread([r["messages"] / r["wall"] for r in runs], _per_second),
                    spread(
                        [r["messages"] / (r["wall"] + r["index_wall"]) for r in runs],
                        _per_second,
                    ),
                    f"{statistics.median(r['indexed_after'] for r in runs):,.0f}",
                ]
                for chats, runs in results.observe.items()
            ],
        ),
    )
    s.add(
        f"*Paced*: every chat receives messages at random, {PACED_RATE_PER_CHAT:g} a second on "
        "average (a busy group), whether or not earlier ones were answered; "
        f"{paced_seconds:g} s per level.",
        "",
    )
    rows = [
        [
            chats,
            f"{len(runs)} × ~{int(statistics.median(r['messages'] for r in runs)):,}",
            f"{statistics.median(r['messages'] for r in runs) / paced_seconds:,.0f} msg/s",
            _p50_p99(runs, "all"),
            _p50_p99(runs, "observed"),
            _p50_p99(runs, "addressed"),
        ]
        for chats, runs in results.paced.items()
    ]
    s.add(
        *table(
            ["concurrent chats", "runs × messages", "offered load", "all", "observed", "addressed"],
            rows,
        )
    )
    return s.body


def targets(s: Section, results: Results) -> None:
    for chats, runs in results.paced.items():
        p50 = statistics.median(statistics.median(r["all"]) for r in runs)
        p99 = quantile([t for r in runs for t in r["all"]], 0.99)
        s.target(
            f"Pipeline per message, paced ({PACED_RATE_PER_CHAT:g} msg/s per chat), {chats} chats",
            f"p50 ≤ {ms(PACED_P50_SECONDS)}, p99 ≤ {ms(PACED_P99_SECONDS)}",
            f"p50 {ms(p50)}, p99 {ms(p99)}",
            p50 <= PACED_P50_SECONDS and p99 <= PACED_P99_SECONDS,
        )
    for label, levels, wanted in (
        ("none addressed (observe mode)", results.observe, OBSERVE_MSGS_PER_SECOND),
        ("one in five answered", results.runs, ANSWERED_MSGS_PER_SECOND),
    ):
        rates = {
            chats: statistics.median(r["messages"] / r["wall"] for r in runs)
            for chats, runs in levels.items()
            if chats > 1
        }
        if not rates:
            continue
        best = max(rates, key=rates.__getitem__)
        s.target(
            f"Saturated pipeline throughput on SQLite, {label}, acknowledged after commit",
            f"≥ {wanted:,} msg/s",
            ", ".join(f"{c} chats {r:,.0f} msg/s" for c, r in sorted(rates.items())),
            rates[best] >= wanted,
        )


def _p50_p99(runs: Sequence[dict[str, Any]], key: str) -> str:
    """Median (min–max) over runs of each run's p50, then the p99 of every sample pooled."""
    p50s = [statistics.median(r[key]) for r in runs if r[key]]
    pooled = [t for r in runs for t in r[key]]
    if not p50s:
        return "–"
    return f"{spread(p50s)} / {ms(quantile(pooled, 0.99))}"


def _per_second(value: float) -> str:
    return f"{value:,.0f} msg/s"

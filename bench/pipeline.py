"""The whole pipeline's overhead per message: `gateway.handle` on the real App with a
zero-latency fake LLM, at 1, 32 and 100 concurrent chats, saturated and paced, and paced with
one more chat flooded by long unaddressed messages that force compactions (issue 35 item 4).
A 1 ms ticker on the same loop measures the longest event-loop stall of every paced run.
"""

from __future__ import annotations

import asyncio
import random
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.loop_stall import LoopTicker
from bench.service import Adapter, FakeLLM, inbound, running_service
from bench.workloads import NAMES

CONCURRENCY = (1, 32, 100)
CONTEXT_TOKENS = 32_000
ADDRESSED_EVERY = 5  # one message in five addresses the bot
# A busy group chat: a message every half second on average, in every chat at once.
PACED_RATE_PER_CHAT = 2.0
# The flooded chat receives four windows' worth of long unaddressed messages over the run.
FLOOD_WINDOWS = 4
FLOOD_MESSAGE_WORDS = 300  # about 1,600 characters, 330 tokens
FLOOD_CHAT = "flood"
_WORDS = [
    "ok",
    "sure",
    "tomorrow",
    "lunch",
    "deploy",
    "why",
    "budget",
    "venue",
    "ticket",
    "agreed",
    "maybe",
    "later",
    "the",
    "and",
]


@dataclass(slots=True)
class Results:
    runs: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # closed loop, per level
    observe: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # none addressed
    peak_mb: dict[int, float] = field(default_factory=dict)
    paced: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    flooded: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # paced + a flood
    paced_seconds: float = 0.0


async def measure(
    results: Results,
    directory: Path,
    *,
    messages: int,
    reps: int,
    paced_seconds: float,
    paced_reps: int,
) -> None:
    """Closed-loop runs at each concurrency, one traced run for memory, then paced runs
    without and with a flooded chat, alternating so a busy moment hits both alike."""
    results.paced_seconds = paced_seconds
    for chats in CONCURRENCY:
        per_chat = max(10, messages // chats)
        for rep in range(reps):
            results.runs.setdefault(chats, []).append(
                await _level(directory / f"c{chats}-{rep}", chats, per_chat)
            )
        traced = await _level(directory / f"c{chats}-traced", chats, per_chat, trace=True)
        results.peak_mb[chats] = traced["peak_mb"]
        if chats == 1:
            continue
        for rep in range(reps):
            results.observe.setdefault(chats, []).append(
                await _level(directory / f"c{chats}-observe-{rep}", chats, per_chat, every=0)
            )
        for rep in range(paced_reps):
            for flood, into in ((False, results.paced), (True, results.flooded)):
                into.setdefault(chats, []).append(
                    await _level(
                        directory / f"c{chats}-paced-{rep}-{int(flood)}",
                        chats,
                        0,
                        paced_seconds=paced_seconds,
                        flood=flood,
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
    flood: bool = False,
) -> dict[str, Any]:
    """`chats` chats talking at once through `gateway.handle`.

    Closed loop (default): each chat sends its next message as soon as the previous one is
    handled (or answered, when it addressed the bot), which saturates the service. Paced: each
    chat's messages arrive at random (Poisson, PACED_RATE_PER_CHAT a second) for
    `paced_seconds`, whether or not earlier ones were answered, as people do; with `flood`,
    one more chat receives FLOOD_WINDOWS windows of long unaddressed messages meanwhile.
    """
    await asyncio.to_thread(directory.mkdir, parents=True)
    llm = FakeLLM()
    adapter = Adapter()
    observed: list[float] = []
    addressed: list[float] = []
    flooded: list[float] = []
    pending: list[asyncio.Task[None]] = []
    rng = random.Random(f"pipeline:{chats}:{paced_seconds}:{flood}")
    people = NAMES[:12]
    async with running_service(directory, context_length=CONTEXT_TOKENS, llm=llm) as (
        app,
        endpoint,
    ):
        gateway = app.gateway

        async def send(c: int, m: int) -> None:
            message_id = str(m)
            is_addressed = bool(every) and m % every == every - 1
            text = f"message {m} in chat {c}: " + " ".join(rng.choices(_WORDS[:6], k=12))
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

        async def flooding() -> None:
            count = FLOOD_WINDOWS * CONTEXT_TOKENS // (FLOOD_MESSAGE_WORDS + 30)
            gap = paced_seconds / count
            for m in range(count):
                text = " ".join(rng.choices(_WORDS, k=FLOOD_MESSAGE_WORDS))
                message = inbound(FLOOD_CHAT, people[m % 3], text, str(m), addressed=False)
                start = time.perf_counter()
                await gateway.handle(message, adapter)
                flooded.append(time.perf_counter() - start)
                await asyncio.sleep(gap)

        if trace:
            tracemalloc.start()
        ticker = LoopTicker()
        if paced_seconds:  # a ticker would cost the saturated runs their throughput
            await ticker.start()
        begin = time.perf_counter()
        loads = [(paced if paced_seconds else closed)(c) for c in range(chats)]
        await asyncio.gather(*loads, *([flooding()] if flood else []))
        await asyncio.gather(*pending)
        await gateway.join()
        wall = time.perf_counter() - begin
        stall = await ticker.stop()
        # SQLite indexes for search behind the writer: what catching up costs after the run.
        index_pending = getattr(app.services.store, "index_pending", None)
        index_begin = time.perf_counter()
        indexed = await index_pending() if index_pending is not None else 0
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
        "flooded": flooded,
        "summary_calls": endpoint.calls,
        "stall": stall,
        "gc": ticker.longest_gc,
        "peak_mb": peak,
        "replies": len(adapter.sent),
    }

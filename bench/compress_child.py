"""One timing of `compress()` in a fresh process: `python -m bench.compress_child SIZE MODE
COUNTS` prints one JSON line. The first call is the cold one (the first compaction after a
restart); the later calls, each on the same chat decoded afresh, are the warm ones. A 1 ms
ticker task runs on the same loop throughout: its longest gap is the longest event-loop stall.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Sequence
from functools import partial
from typing import Any

from bench.hermes_chat import calibration, fixed_summary, hermes_chat
from bench.loop_stall import with_ticker

WINDOW_TOKENS = 200_000  # Hermes' run used a 200K window
WARM_CALLS, WARM_CALLS_BELOW = 4, 20_000  # bigger chats: one warm call


class StubSummarizer:
    """Answers at once with the fixed 2,000-character summary of Hermes' run."""

    def __init__(self) -> None:
        self._summary = fixed_summary()

    async def summarize(self, request: Any) -> str:
        return self._summary


def _timed_calibration(messages: Sequence[dict[str, Any]]) -> float:
    gc.collect()
    begin = time.perf_counter()
    calibration(messages)
    return time.perf_counter() - begin


async def child(
    size: int, mode: str, counts: list[int], hints: list[int], trace: bool
) -> dict[str, Any]:
    from compactbot.bot.heap import freeze_startup_heap
    from compactbot.compression import CompressorConfig, ContextCompressor
    from compactbot.compression.tokens import counter_for

    counter_for(None).count_text("load the encoding")  # the service loads it at start
    # As the service's start-up does (bot.app), before any chat is read: the collector no
    # longer rescans what was loaded.
    freeze_startup_heap()
    messages = hermes_chat(size)
    blob = json.dumps(messages)
    config = CompressorConfig(context_length=WINDOW_TOKENS)

    def compressor() -> Any:
        return ContextCompressor(config, None if mode == "deterministic" else StubSummarizer())

    if trace:
        tracemalloc.start()
        base = tracemalloc.get_traced_memory()[0]
        result = await compressor().compress(messages, token_counts=counts, hints=hints)
        peak = tracemalloc.get_traced_memory()[1] - base
        del result
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - base
        return {"peak_mb": peak / 1e6, "retained_kb": retained / 1e3}
    # The calibration runs just before and just after, each after a full collection, and the
    # faster one counts: a collector pass or a busy core landing in it must not flatter us.
    calibration_s = _timed_calibration(messages)
    gc.collect()
    first = compressor()
    result, cold_s, cold_stall = await with_ticker(
        partial(first.compress, messages, token_counts=counts, hints=hints)
    )
    calibration_s = min(calibration_s, _timed_calibration(messages))
    warm: list[tuple[float, float]] = []
    for _ in range(WARM_CALLS if size < WARM_CALLS_BELOW else 1):
        fresh = json.loads(blob)
        gc.collect()
        again = compressor()
        _, seconds, stall = await with_ticker(
            partial(again.compress, fresh, token_counts=counts, hints=hints)
        )
        warm.append((seconds, stall))
    return {
        "cold_ms": cold_s * 1000,
        "cold_stall_ms": cold_stall * 1000,
        "warm_ms": statistics.median(w[0] for w in warm) * 1000,
        "warm_stall_ms": max(w[1] for w in warm) * 1000,
        "calibration_ms": calibration_s * 1000,
        "outcome": result.outcome,
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compress_child")
    parser.add_argument("size", type=int)
    parser.add_argument("mode", choices=("stub", "deterministic"))
    parser.add_argument("stored", help="a JSON file with the stored token counts and hints")
    parser.add_argument("--trace", action="store_true", help="peak memory instead of time")
    args = parser.parse_args(argv)
    with open(args.stored, encoding="utf-8") as file:
        stored = json.load(file)
    result = child(args.size, args.mode, stored["counts"], stored["hints"], args.trace)
    print(json.dumps(asyncio.run(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

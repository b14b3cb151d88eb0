"""compress() against Hermes' on the chat of `reference/hermes-speed.md`, first call in a fresh
process, with the calibration pass timed beside it (ratio = K × calibration / ours).

Each measurement is its own `python -m bench.compress_speed --child …` process, so nothing a
previous call computed (tokenizer caches, the allocator's warm arenas) helps: the first
compaction after a restart is the one that counts. Counts and `message_hints` are the
store's, computed once by the parent (as a store computes them when it stores a message) and
handed to the child, as the service hands them over; `no counts` hands over neither.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.hermes_chat import HERMES_K, SIZES, calibration, hermes_chat
from bench.report import Section, table

WINDOW_TOKENS = 200_000  # Hermes' run used a 200K window
MODES = ("stub", "deterministic", "no counts")
STUB_SUMMARY = "## Key facts and exact values\n" + "- the deploy moved to Thursday\n" * 64
TARGETS = {"stub": 10.0, "deterministic": 5.0, "no counts": 3.0}
HERMES_PEAK_MB = 61.0
CHILD_TIMEOUT_SECONDS = 300
LATER_CALLS, LATER_CALLS_BELOW = 5, 20_000  # bigger chats: one later call
# A process on a chat below LATER_CALLS_BELOW takes well under a second: this many times the
# processes there, so one noisy moment on a shared machine cannot move the median.
SMALL_CHAT_PROCESSES = 3


class StubSummarizer:
    """Answers at once with a fixed ~2,000-character summary, as in Hermes' run."""

    async def summarize(self, request: Any) -> str:
        return STUB_SUMMARY[:2_000]


@dataclass(slots=True)
class Results:
    runs: dict[tuple[int, str], list[dict[str, float]]] = field(default_factory=dict)
    memory: dict[str, float] = field(default_factory=dict)


def measure(results: Results, *, reps: int, sizes: tuple[int, ...] = SIZES) -> None:
    """Fresh child processes, interleaved by mode so a noisy moment hits all modes alike; the
    modes take turns going first, so none always follows the same neighbour."""
    with tempfile.TemporaryDirectory(prefix="bench-compress-") as tmp:
        for size in sizes:
            counts_file = Path(tmp) / f"counts-{size}.json"
            counts_file.write_text(json.dumps(_stored(size)))
            processes = reps * (SMALL_CHAT_PROCESSES if size < LATER_CALLS_BELOW else 1)
            for rep in range(processes):
                first = rep % len(MODES)
                for mode in MODES[first:] + MODES[:first]:
                    run = _child(size, mode, counts_file)
                    results.runs.setdefault((size, mode), []).append(run)
        biggest = max(sizes)
        counts_file = Path(tmp) / f"counts-{biggest}.json"
        results.memory = _child(biggest, "stub", counts_file, trace=True)


def _stored(size: int) -> dict[str, list[int]]:
    from compactbot.compression.message_hints import message_hints
    from compactbot.compression.tokens import TokenCounter

    counter = TokenCounter(None, cache_entries=0)
    messages = hermes_chat(size)
    return {
        "counts": [counter.count_message(m) for m in messages],
        "hints": [message_hints(m) for m in messages],
    }


def _child(size: int, mode: str, counts_file: Path, *, trace: bool = False) -> dict[str, float]:
    command = [sys.executable, "-m", "bench.compress_speed", "--child", str(size), mode]
    command += [str(counts_file)] + (["--trace"] if trace else [])
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=CHILD_TIMEOUT_SECONDS, check=True
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


async def _child_main(size: int, mode: str, stored: dict | None, trace: bool) -> dict[str, Any]:
    from compactbot.compression import CompressorConfig, ContextCompressor
    from compactbot.compression.tokens import uncached_counter_for

    messages = hermes_chat(size)
    summarizer = None if mode == "deterministic" else StubSummarizer()
    compressor = ContextCompressor(CompressorConfig(context_length=WINDOW_TOKENS), summarizer)
    uncached_counter_for(None).count_text("load the encoding")  # the service loads it at start
    gc.collect()
    if trace:
        return await _traced(compressor, messages, stored)
    # The calibration runs just before and just after, each after a full collection, and the
    # faster one counts: a collector pass or a busy core landing in it must not flatter us.
    calibration_s, reference = _timed_calibration(messages)
    gc.collect()
    begin = time.perf_counter()
    result = await compressor.compress(messages, **_given(stored))
    ours_s = time.perf_counter() - begin
    calibration_s = min(calibration_s, _timed_calibration(messages)[0])
    later_s = await _later_calls(size, mode, stored)
    return {
        "ours_ms": ours_s * 1000,
        "later_ms": later_s * 1000,
        "calibration_ms": calibration_s * 1000,
        "outcome": result.outcome,
        "tokens_before": result.tokens_before,
        "estimate": reference,
    }


async def _later_calls(size: int, mode: str, stored: dict | None) -> float:
    """The median of a few more calls in the same process, each on a chat built afresh: what a
    compaction costs once the process has run one (shown beside the first call, not instead)."""
    from compactbot.compression import CompressorConfig, ContextCompressor

    summarizer = None if mode == "deterministic" else StubSummarizer()
    times = []
    for _ in range(LATER_CALLS if size < LATER_CALLS_BELOW else 1):
        messages = hermes_chat(size)
        compressor = ContextCompressor(CompressorConfig(context_length=WINDOW_TOKENS), summarizer)
        gc.collect()
        begin = time.perf_counter()
        await compressor.compress(messages, **_given(stored))
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def _timed_calibration(messages: list[dict]) -> tuple[float, int]:
    gc.collect()
    begin = time.perf_counter()
    reference = calibration(messages)
    return time.perf_counter() - begin, reference


def _given(stored: dict | None) -> dict[str, Any]:
    if stored is None:
        return {}
    return {"token_counts": stored["counts"], "hints": stored["hints"]}


async def _traced(compressor: Any, messages: list[dict], stored: dict | None) -> dict:
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    tracemalloc.reset_peak()
    result = await compressor.compress(messages, **_given(stored))
    peak = tracemalloc.get_traced_memory()[1] - base
    del result
    gc.collect()
    retained = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return {"peak_mb": peak / 1e6, "retained_kb": retained / 1e3}


def render(results: Results) -> Section:
    s = Section("compress() against Hermes, first call in a fresh process")
    s.add(
        "The synthetic chat of `reference/hermes-speed.md` (seeded; 300-char user turns, "
        "400-char replies, a 3,000-char tool result every 10th turn), "
        f"{WINDOW_TOKENS // 1000}K window, each measurement in its own fresh process; "
        "`counts` = the store's token counts and message hints passed as the service passes "
        "them, `stub` = a "
        "summarizer answering a fixed 2,000-char summary at once, `deterministic` = no "
        "summarizer, `no counts` = neither counts nor hints (compress() then counts what it "
        "keeps and estimates the middle it summarises). "
        "Hermes' time is K × the calibration pass timed in the same process "
        "just before and just after (the faster of the two; K from hermes-speed.md). "
        "Medians over the processes. The targets read the first call; `later calls` is the "
        "median of more calls in the same process, each on a chat built afresh, shown so the "
        "cost of a cold start (interpreter and allocator warming up) can be told apart.",
        "",
    )
    rows = []
    for (size, mode), runs in sorted(results.runs.items()):
        ours = statistics.median(r["ours_ms"] for r in runs)
        later = statistics.median(r["later_ms"] for r in runs)
        cal = statistics.median(r["calibration_ms"] for r in runs)
        ratio = statistics.median(HERMES_K[size] * r["calibration_ms"] / r["ours_ms"] for r in runs)
        later_ratio = statistics.median(
            HERMES_K[size] * r["calibration_ms"] / r["later_ms"] for r in runs
        )
        rows.append(
            [
                f"{size:,}",
                mode,
                len(runs),
                f"{ours:.1f} ms",
                f"{cal:.2f} ms",
                f"{HERMES_K[size] * cal:.0f} ms",
                f"{ratio:.1f}×",
                f"{later:.1f} ms ({later_ratio:.1f}×)",
                runs[0]["outcome"],
            ]
        )
    s.add(
        *table(
            [
                "messages",
                "mode",
                "processes",
                "ours",
                "calibration",
                "Hermes (K × cal)",
                "ratio",
                "later calls (ratio)",
                "outcome",
            ],
            rows,
        )
    )
    errors = [
        f"{size:,}: {100 * (runs[0]['tokens_before'] / exact[0]['tokens_before'] - 1):+.2f} %"
        for (size, mode), runs in sorted(results.runs.items())
        if mode == "no counts" and (exact := results.runs.get((size, "stub")))
    ]
    if errors:
        s.add(
            "`tokens_before` without counts (the summarised middle estimated) against the "
            f"exact count: {', '.join(errors)}.",
            "",
        )
    if results.memory:
        s.add(
            f"Memory of one {max(SIZES):,}-message `compress()` (tracemalloc, stub, counts): "
            f"peak {results.memory['peak_mb']:.1f} MB above the input, "
            f"{results.memory['retained_kb']:.0f} kB retained after it returned "
            f"(Hermes: {HERMES_PEAK_MB:.0f} MB).",
            "",
        )
    return s


def targets(s: Section, results: Results) -> None:
    for mode, wanted in TARGETS.items():
        ratios = {
            size: statistics.median(
                HERMES_K[size] * r["calibration_ms"] / r["ours_ms"] for r in runs
            )
            for (size, m), runs in results.runs.items()
            if m == mode
        }
        if not ratios:
            continue
        worst = min(ratios, key=ratios.__getitem__)
        s.target(
            f"`compress()` vs Hermes, first call in a fresh process, {mode}",
            f"≥ {wanted:g}× at every size",
            ", ".join(f"{n // 1000}K {r:.1f}×" for n, r in sorted(ratios.items())),
            ratios[worst] >= wanted,
        )
    if results.memory:
        peak = results.memory["peak_mb"]
        s.target(
            f"Peak memory of a {max(SIZES) // 1000}K-message `compress()`",
            f"≤ {HERMES_PEAK_MB:.0f} MB, nothing retained",
            f"{peak:.1f} MB, {results.memory['retained_kb']:.0f} kB retained",
            peak <= HERMES_PEAK_MB and results.memory["retained_kb"] < 100,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compress_speed")
    parser.add_argument("--child", nargs=3, metavar=("SIZE", "MODE", "COUNTS"), required=True)
    parser.add_argument("--trace", action="store_true")
    args = parser.parse_args(argv)
    size, mode, counts_file = int(args.child[0]), args.child[1], Path(args.child[2])
    stored = None if mode == "no counts" else json.loads(counts_file.read_text())
    print(json.dumps(asyncio.run(_child_main(size, mode, stored, args.trace))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How long the machinery takes without the LLM (anchors C5, C6; issues 17 and 37): compress()
against Hermes' on the same chat with the event-loop stall, an answered turn's own cost, the
hygiene check, token counting and the store.
"""

from __future__ import annotations

import asyncio
import cProfile
import pstats
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import compress_speed, turn_cost
from bench.compress_child import StubSummarizer
from bench.hermes_chat import SIZES, hermes_chat, reference
from bench.report import Section, ms, quantile, spread, table
from bench.workloads import stress_session
from compactbot.bot.store import SqliteStore
from compactbot.bot.store.base import NewMessage
from compactbot.compression import CompressorConfig, ContextCompressor, hygiene_reason
from compactbot.compression.tokens import TokenCounter, counter_for

HYGIENE_SIZES = (100, 5_000, 50_000)
WINDOW_TOKENS = 128_000  # the default window when the endpoint does not report one
PROFILE_ROWS = 12  # compression/ functions shown, by cumulative time


@dataclass(frozen=True, slots=True)
class Plan:
    compress_processes: int  # fresh processes per size and mode
    compress_sizes: tuple[int, ...]
    turns: int  # answered turns per transcript size
    hygiene_batches: int  # repetitions, interleaved across session sizes
    hygiene_calls: int  # per batch
    append_single: int
    archive_reps: int


FULL = Plan(
    compress_processes=5,
    compress_sizes=SIZES,
    turns=200,
    hygiene_batches=5,
    hygiene_calls=600,
    append_single=2_000,
    archive_reps=5,
)
QUICK = Plan(
    compress_processes=2,
    compress_sizes=SIZES[:2],
    turns=40,
    hygiene_batches=2,
    hygiene_calls=250,
    append_single=300,
    archive_reps=2,
)


@dataclass(slots=True)
class Results:
    compress: compress_speed.Results = field(default_factory=compress_speed.Results)
    turns: turn_cost.Results = field(default_factory=turn_cost.Results)
    profile: list[tuple[str, int, float]] = field(default_factory=list)  # function, calls, s
    profile_total: float = 0.0
    profile_size: int = 0
    hygiene: dict[int, list[list[float]]] = field(default_factory=dict)  # batches of calls
    counting: tuple[float, float, int] = (0.0, 0.0, 0)  # messages/s, tokens/s, messages
    append_single: float = 0.0
    append_batch: float = 0.0
    archive: list[float] = field(default_factory=list)
    archive_rows: int = 0


async def run(quick: bool = False) -> tuple[Section, Results]:
    plan = QUICK if quick else FULL
    started = time.perf_counter()
    results = Results()
    if reference() is not None:
        await asyncio.to_thread(
            compress_speed.measure,
            results.compress,
            reps=plan.compress_processes,
            sizes=plan.compress_sizes,
        )
        await _profile(results)
    sessions = {n: stress_session(n) for n in HYGIENE_SIZES}
    _counting(results, sessions[max(sessions)])
    if reference() is not None:
        with tempfile.TemporaryDirectory(prefix="bench-turns-") as tmp:
            await turn_cost.measure(results.turns, Path(tmp), turns=plan.turns)
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        await _hygiene(results, sessions, plan, Path(tmp))
        await _store(results, sessions[5_000], plan, Path(tmp))
    section = render(results, plan)
    section.seconds = time.perf_counter() - started
    return section, results


async def _profile(results: Results) -> None:
    """Where one compress() (stub summarizer, stored counts) spends its time: the compression/
    functions with the largest cumulative time (cProfile inflates the total; shares matter)."""
    messages = hermes_chat(max(results.compress.sizes))
    counter = counter_for(None)
    counts = [counter.count_message(m) for m in messages]
    config = CompressorConfig(context_length=compress_speed.WINDOW_TOKENS)
    compressor = ContextCompressor(config, StubSummarizer())
    profiler = cProfile.Profile()
    profiler.enable()
    await compressor.compress(messages, token_counts=counts)
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    rows = []
    for (filename, _line, function), (_cc, calls, _tt, cumulative, _callers) in stats.items():
        if "/compression/" not in filename:
            continue
        module = Path(filename).stem
        if (module, function) == ("compressor", "compress"):
            results.profile_total = cumulative
            continue
        rows.append((f"{module}.{function}", calls, cumulative))
    rows.sort(key=lambda row: row[2], reverse=True)
    results.profile = rows[:PROFILE_ROWS]
    results.profile_size = len(messages)


def _counting(results: Results, messages: Sequence[dict]) -> None:
    counter = TokenCounter(None)  # a fresh counter: tokenizer throughput, not cache hits
    start = time.perf_counter()
    tokens = sum(counter.count_message(m) for m in messages)
    elapsed = time.perf_counter() - start
    results.counting = (len(messages) / elapsed, tokens / elapsed, len(messages))


def _rows(messages: Sequence[dict]) -> list[NewMessage]:
    counter = counter_for(None)
    return [
        NewMessage.from_openai(m, counter.count_message(m))
        for m in messages
        if m.get("role") != "system"
    ]


async def _hygiene(
    results: Results, sessions: dict[int, list[dict]], plan: Plan, directory: Path
) -> None:
    """Cost per incoming message of the gateway's pre-agent check, as the session grows."""
    async with SqliteStore(directory / "hygiene.db") as store:
        ids = {}
        for n in HYGIENE_SIZES:
            session = await store.active_session(f"bench:hygiene-{n}")
            rows = _rows(sessions[n])
            for start in range(0, len(rows), 1_000):
                await store.append_messages(session.id, rows[start : start + 1_000])
            ids[n] = session.id
        # Batches alternate between sizes, so a busy moment on a shared machine hits all alike.
        for _ in range(plan.hygiene_batches):
            for n, session_id in ids.items():
                times = []
                for _ in range(plan.hygiene_calls):
                    begin = time.perf_counter()
                    record = await store.get_session(session_id)
                    hygiene_reason(
                        message_count=record.active_messages,
                        tokens=max(record.compressor.last_prompt_tokens, record.active_tokens),
                        context_length=WINDOW_TOKENS,
                    )
                    times.append(time.perf_counter() - begin)
                results.hygiene.setdefault(n, []).append(times)


async def _store(results: Results, messages: Sequence[dict], plan: Plan, directory: Path) -> None:
    rows = _rows(messages)
    async with SqliteStore(directory / "store.db") as store:
        session = await store.active_session("bench:append-single")
        start = time.perf_counter()
        for row in rows[: plan.append_single]:
            await store.append_messages(session.id, [row])
        results.append_single = plan.append_single / (time.perf_counter() - start)
        session = await store.active_session("bench:append-batch")
        start = time.perf_counter()
        for begin in range(0, len(rows), 100):
            await store.append_messages(session.id, rows[begin : begin + 100])
        results.append_batch = len(rows) / (time.perf_counter() - start)
        # archive_and_compact: a 5K-message session folded into a summary plus a 20-row tail.
        for rep in range(plan.archive_reps):
            session = await store.active_session(f"bench:archive-{rep}")
            for begin in range(0, len(rows), 1_000):
                await store.append_messages(session.id, rows[begin : begin + 1_000])
            active = await store.load_active(session.id)
            session = await store.get_session(session.id)
            summary = NewMessage(role="user", content="[summary] " + "x" * 4_000, tokens=1_000)
            tail = [NewMessage.from_openai(m.to_openai(), m.tokens) for m in active[-20:]]
            start = time.perf_counter()
            commit = await store.archive_and_compact(session, [summary, *tail], active[-1].id)
            results.archive.append(time.perf_counter() - start)
            results.archive_rows = commit.archived if commit else 0


def render(results: Results, plan: Plan) -> Section:
    s = Section("Speed without the LLM")
    if reference() is None:
        s.add("`reference/hermes_speed_chat.py` is not in the shared folder: compress() and "
              "turn timings skipped.", "")  # fmt: skip
        s.target("compress() timed on the Hermes chat", "present", "reference not found", False)
    s.add(*compress_speed.render(results.compress).body)
    if results.profile:
        s.add(
            f"Where one `compress()` of {results.profile_size:,} messages "
            "(stub, stored counts) spends its time: the compression/ functions with the largest "
            f"cumulative time (cProfile, {ms(results.profile_total)} under the profiler; "
            "cumulative, so a caller includes the rows it calls):",
            "",
            *table(
                ["function (compression/)", "calls", "cumulative", "share"],
                [
                    [
                        f"`{name}`",
                        f"{calls:,}",
                        ms(seconds),
                        f"{100 * seconds / results.profile_total:.0f} %",
                    ]
                    for name, calls, seconds in results.profile
                ],
            ),
        )
    s.add(
        "Hygiene check per incoming message: `store.get_session` (the running totals) + "
        "`hygiene_reason`, on a real SqliteStore in a temp dir, session pre-filled:",
        "",
    )
    rows = []
    for n, batches in results.hygiene.items():
        pooled = [t for batch in batches for t in batch]
        rows.append(
            [
                f"{n:,}",
                f"{len(batches)} × {len(batches[0])}",
                spread([statistics.median(batch) for batch in batches]),
                ms(quantile(pooled, 0.99)),
            ]
        )
    s.add(
        *table(
            ["messages in session", "batches × calls", "median per batch (min–max)", "p99, all"],
            rows,
        )
    )
    per_s, tok_s, n = results.counting
    archive = statistics.median(results.archive) if results.archive else float("nan")
    s.add(
        *table(
            ["operation", "throughput"],
            [
                [
                    "token counting (`count_message`, o200k_base)",
                    f"{per_s:,.0f} messages/s, {tok_s:,.0f} tokens/s (over {n:,} messages)",
                ],
                [
                    "`append_messages`, one message per call (as the gateway does)",
                    f"{results.append_single:,.0f} messages/s",
                ],
                ["`append_messages`, 100 per call", f"{results.append_batch:,.0f} messages/s"],
                [
                    "`archive_and_compact` of a 5,000-message session into 21 rows",
                    f"{spread(results.archive)} per call, "
                    f"{results.archive_rows / archive:,.0f} archived rows/s",
                ],
            ],
        )
    )
    s.add(*turn_cost.render(results.turns))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    s.add(f"Process peak RSS after the speed runs: {rss:,.0f} MB (includes the loaded corpus).", "")
    _targets(s, results)
    return s


def _targets(s: Section, results: Results) -> None:
    compress_speed.targets(s, results.compress)
    turn_cost.targets(s, results.turns)
    worst = max(
        (
            (statistics.median(statistics.median(b) for b in batches), n)
            for n, batches in results.hygiene.items()
        ),
        default=(0.0, 0),
    )
    s.target(
        "Hygiene check per message, every session size (median of batch medians)",
        "≤ 0.1 ms",
        f"worst {ms(worst[0])} at {worst[1]:,} messages",
        worst[0] <= 0.0001,
        _by(worst[0], 0.0001),
    )


def _by(value: float, limit: float) -> str:
    if value <= limit:
        return ""
    ratio = value / limit
    return f"{100 * (ratio - 1):.0f} % over" if ratio < 1.5 else f"{ratio:.1f}× the target"

"""How long the machinery takes without the LLM (anchors C5, C6): compress(), the hygiene check,
token counting, the store, and the whole gateway pipeline under concurrency.
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench import pipeline
from bench.report import Section, loglog_slope, ms, quantile, spread, table
from bench.summarizers import InstantSummarizer, SlowSummarizer
from bench.workloads import stress_session
from bot.store.base import NewMessage
from bot.store.sqlite import SqliteStore
from compression import CompressorConfig, ContextCompressor
from compression.hygiene import hygiene_reason
from compression.tokens import TokenCounter, counter_for

COMPRESS_SIZES = (1_000, 5_000, 50_000)
HYGIENE_SIZES = (100, 5_000, 50_000)
WINDOW_TOKENS = 128_000  # the default window when the endpoint does not report one
SLOW_SUMMARY_SECONDS = 0.2
# The phases of compress() worth naming, as module.function of compression/.
PROFILED = (
    "compressor._plan",
    "handoff.take_handoffs",
    "boundaries.plan_boundaries",
    "prune.prune",
    "compressor._request",
    "summary_input.summary_turns",
    "summary_input.participants",
    "summary_input.derive_focus",
    "assemble.assemble",
    "tokens.count_message",
)


@dataclass(frozen=True, slots=True)
class Plan:
    compress_reps: int
    compress_reps_50k: int
    hygiene_batches: int  # repetitions, interleaved across session sizes
    hygiene_calls: int  # per batch
    append_single: int
    archive_reps: int
    pipeline_messages: int  # per concurrency level, spread over the chats
    pipeline_reps: int
    paced_seconds: float
    paced_reps: int


FULL = Plan(
    compress_reps=9,
    compress_reps_50k=5,
    hygiene_batches=5,
    hygiene_calls=600,
    append_single=2_000,
    archive_reps=5,
    pipeline_messages=1_600,
    pipeline_reps=3,
    paced_seconds=6.0,
    paced_reps=2,
)
QUICK = Plan(
    compress_reps=3,
    compress_reps_50k=2,
    hygiene_batches=2,
    hygiene_calls=250,
    append_single=300,
    archive_reps=2,
    pipeline_messages=400,
    pipeline_reps=1,
    paced_seconds=3.0,
    paced_reps=1,
)


@dataclass(slots=True)
class Results:
    compress: dict[int, list[float]] = field(default_factory=dict)
    compress_outcomes: dict[int, str] = field(default_factory=dict)
    compress_cold: dict[int, float] = field(default_factory=dict)  # first run, empty cache
    profile: list[tuple[str, int, float]] = field(default_factory=list)  # function, calls, s
    profile_total: float = 0.0
    profile_size: int = 0
    slow_total: list[float] = field(default_factory=list)
    hygiene: dict[int, list[list[float]]] = field(default_factory=dict)  # batches of calls
    counting: tuple[float, float, int] = (0.0, 0.0, 0)  # messages/s, tokens/s, messages
    append_single: float = 0.0
    append_batch: float = 0.0
    archive: list[float] = field(default_factory=list)
    archive_rows: int = 0
    pipeline: pipeline.Results = field(default_factory=pipeline.Results)


async def run(quick: bool = False) -> tuple[Section, Results]:
    plan = QUICK if quick else FULL
    started = time.perf_counter()
    results = Results()
    sessions = {n: stress_session(n) for n in sorted({*COMPRESS_SIZES, *HYGIENE_SIZES})}
    await _compress(results, sessions, plan)
    _counting(results, sessions[max(sessions)])
    with tempfile.TemporaryDirectory(prefix="bench-store-") as tmp:
        await _hygiene(results, sessions, plan, Path(tmp))
        await _store(results, sessions[5_000], plan, Path(tmp))
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp:
        await pipeline.measure(
            results.pipeline,
            Path(tmp),
            messages=plan.pipeline_messages,
            reps=plan.pipeline_reps,
            paced_seconds=plan.paced_seconds,
            paced_reps=plan.paced_reps,
        )
    section = render(results, plan)
    section.seconds = time.perf_counter() - started
    return section, results


async def _compress(results: Results, sessions: dict[int, list[dict]], plan: Plan) -> None:
    config = CompressorConfig(context_length=WINDOW_TOKENS)
    for n in COMPRESS_SIZES:
        messages = sessions[n]
        reps = plan.compress_reps_50k if n >= 50_000 else plan.compress_reps
        times = []
        # The service counts each message when it stores it, so compress() normally finds the
        # texts in the counter's cache; the first repetition runs with the cache emptied.
        counter_for(None)._counts.clear()
        for rep in range(reps):
            compressor = ContextCompressor(config, InstantSummarizer())
            gc.collect()
            start = time.perf_counter()
            result = await compressor.compress(messages)
            elapsed = time.perf_counter() - start
            if rep == 0:
                results.compress_cold[n] = elapsed
            else:
                times.append(elapsed)
            results.compress_outcomes[n] = result.outcome
        results.compress[n] = times
    await _profile(results, sessions[max(COMPRESS_SIZES)], config)
    messages = sessions[5_000]
    for _ in range(max(2, plan.compress_reps // 3)):
        slow = SlowSummarizer(InstantSummarizer(), SLOW_SUMMARY_SECONDS)
        compressor = ContextCompressor(config, slow)
        start = time.perf_counter()
        await compressor.compress(messages)
        results.slow_total.append(time.perf_counter() - start)


async def _profile(results: Results, messages: list[dict], config: CompressorConfig) -> None:
    """Where one compress() spends its time, by compression/ function (cProfile inflates the
    total, the shares are what matter)."""
    profiler = cProfile.Profile()
    compressor = ContextCompressor(config, InstantSummarizer())
    profiler.enable()
    await compressor.compress(messages)
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
        if f"{module}.{function}" in PROFILED:
            rows.append((f"{module}.{function}", calls, cumulative))
    rows.sort(key=lambda row: PROFILED.index(row[0]))
    results.profile = rows
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
    s.add(
        "`compress()` on stress sessions (a 12-person chitchat room with tool rounds) at the "
        f"default {WINDOW_TOKENS // 1000}K window, with a summarizer that answers at once; "
        "a fresh compressor per repetition. Times are median (min–max). The service counts each "
        "message when it stores it, so compress() normally finds every text in the token "
        "counter's cache: the timed repetitions run that way, and the first repetition runs "
        "with the cache emptied (as right after a restart) and is shown apart.",
        "",
    )
    medians = {n: statistics.median(t) for n, t in results.compress.items()}
    rows = [
        [
            f"{n:,}",
            len(t),
            spread(t),
            ms(results.compress_cold.get(n, float("nan"))),
            results.compress_outcomes.get(n, "?"),
        ]
        for n, t in results.compress.items()
    ]
    s.add(*table(["messages", "reps", "compress() time", "first run, cold cache", "outcome"], rows))
    slope = loglog_slope(list(medians), list(medians.values()))
    slow = statistics.median(results.slow_total) if results.slow_total else float("nan")
    s.add(
        f"Growth: log-log slope {slope:.2f} over {', '.join(f'{n:,}' for n in medians)} messages. "
        f"Cross-check with a summarizer that sleeps {SLOW_SUMMARY_SECONDS * 1000:.0f} ms at 5,000 "
        f"messages: {ms(slow)} in all, {ms(slow - SLOW_SUMMARY_SECONDS)} without the sleep.",
        "",
    )
    if results.profile:
        s.add(
            f"Where one `compress()` of {results.profile_size - 1:,} messages spends its time "
            f"(cProfile, {ms(results.profile_total)} under the profiler; cumulative time, so "
            "`_plan` and `_request` include the rows below them, and `count_message` is every "
            "token count anywhere in the call):",
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
    s.add(*pipeline.render(results.pipeline, plan.paced_seconds))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    s.add(f"Process peak RSS after the speed runs: {rss:,.0f} MB (includes the loaded corpus).", "")
    _targets(s, results, medians, slope)
    return s


def _targets(s: Section, results: Results, medians: dict[int, float], slope: float) -> None:
    at5k, at50k = medians.get(5_000, float("nan")), medians.get(50_000, float("nan"))
    why = _compress_note(results)
    s.target(
        "`compress()` excluding the LLM at 5K messages",
        "≤ 10 ms",
        ms(at5k),
        at5k <= 0.010,
        _by(at5k, 0.010) + (f"; {why}" if at5k > 0.010 else ""),
    )
    s.target(
        "`compress()` excluding the LLM at 50K messages",
        "≤ 100 ms",
        ms(at50k),
        at50k <= 0.100,
        _by(at50k, 0.100) + (f"; {why}" if at50k > 0.100 else ""),
    )
    s.target("`compress()` growth, log-log slope", "≤ 1.1", f"{slope:.2f}", slope <= 1.1)
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
    pipeline.targets(s, results.pipeline)


def _compress_note(results: Results) -> str:
    """The profile's explanation of a slow compress(), in numbers."""
    if not results.profile or not results.profile_total:
        return ""
    rows = {name: (calls, seconds) for name, calls, seconds in results.profile}
    parts = []
    counted = rows.get("tokens.count_message")
    if counted:
        per_message = counted[0] / max(1, results.profile_size)
        parts.append(
            f"every message's token count is taken {per_message:.1f}× per call, mostly from "
            f"the counter's cache ({100 * counted[1] / results.profile_total:.0f} % of the "
            "profiled time); the rest is plain Python passes over every message"
        )
    turns = rows.get("summary_input.summary_turns")
    if turns:
        parts.append(
            f"preparing the summarizer's input takes {100 * turns[1] / results.profile_total:.0f} %"
        )
    return "; ".join(parts)


def _by(value: float, limit: float) -> str:
    if value <= limit:
        return ""
    ratio = value / limit
    return f"{100 * (ratio - 1):.0f} % over" if ratio < 1.5 else f"{ratio:.1f}× the target"

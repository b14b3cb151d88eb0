"""Fact retention after k = 1…10 compactions, with scripted summarizers and baselines (C1, C2)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from bench import coverage
from bench.drive import Run, drive
from bench.planted_items import KINDS
from bench.report import Section, pct, table
from bench.summarizers import (
    FailingSummarizer,
    ForgetfulSummarizer,
    LossySummarizer,
    OracleSummarizer,
)
from bench.verdict_tallies import attribution, count_verdict, pins_at, survival
from bench.workloads import Workload, chat_room
from compactbot.compression import CompressorConfig, Summarizer

ROOMS = (3, 12, 50)
# A small window compacts often, so one workload gives items that live through 10+ compactions.
WINDOW_TOKENS = 16_000
LOSSY_P = 0.10
K_MAX = 10
SHOWN_K = (1, 2, 3, 5, 10)

OURS_PERFECT = "ours + perfect"
OURS_LOSSY = "ours + lossy 10 %"
OURS_BUILTIN = "ours + built-in (no LLM)"
OURS_FAILING = "ours + failing LLM"
ONE_SHOT = "one-shot, no previous summary"
TRUNCATION = "plain truncation"
NONE = "no compression"


@dataclass(frozen=True, slots=True)
class Plan:
    seeds: tuple[int, ...]
    human_messages: int
    per_kind: int


# Smaller windows, where the summarizer's input must be cut to fit the window.
SMALL_WINDOWS = (4_096, 8_192, WINDOW_TOKENS)


def small_room() -> Workload:
    """A shorter 12-person room with smaller tool outputs, sized for 4K–8K windows."""
    return chat_room(12, 700, 5, per_kind=3, tool_output_chars=(300, 2_000))


def special_rooms(plan: Plan) -> list[Workload]:
    """Every planted line labelled ("FACT:", "RULE:", "Note:"), and a long session whose items
    are all planted in its first tenth."""
    seed = plan.seeds[0]
    return [
        chat_room(12, plan.human_messages, seed, per_kind=plan.per_kind, labels=True),
        chat_room(12, 2 * plan.human_messages, seed, per_kind=plan.per_kind, early_share=0.10),
    ]


FULL = Plan(seeds=(1, 2, 3), human_messages=2_400, per_kind=6)
QUICK = Plan(seeds=(1,), human_messages=1_400, per_kind=4)


def strategies(workload: Workload) -> list[tuple[str, Callable[[], Summarizer | None]]]:
    return [
        (OURS_PERFECT, lambda: OracleSummarizer(workload.planted)),
        (
            OURS_LOSSY,
            lambda: LossySummarizer(
                workload.planted, workload.people, p=LOSSY_P, seed=workload.name
            ),
        ),
        (OURS_BUILTIN, lambda: None),
        (OURS_FAILING, lambda: FailingSummarizer()),
        (ONE_SHOT, lambda: ForgetfulSummarizer(workload.planted)),
    ]


async def run_workload(workload: Workload, window: int = WINDOW_TOKENS) -> list[Run]:
    runs: list[Run] = []
    for name, make in strategies(workload):
        runs.append(
            await drive(
                workload, strategy=name, kind="compressor", window=window, summarizer=make()
            )
        )
    perfect = runs[0]
    # Truncation gets the same budget our pipeline ended at after its compactions.
    afters = sorted(c.tokens_after for c in perfect.compactions)
    budget = afters[len(afters) // 2] if afters else window // 2
    runs.append(
        await drive(
            workload, strategy=TRUNCATION, kind="truncation", window=window, truncate_to=budget
        )
    )
    runs.append(await drive(workload, strategy=NONE, kind="none", window=window))
    return runs


def by_strategy(runs: Sequence[Run]) -> dict[str, list[Run]]:
    out: dict[str, list[Run]] = {}
    for run in runs:
        out.setdefault(run.strategy, []).append(run)
    return out


async def run(quick: bool = False) -> tuple[Section, dict[str, list[Run]]]:
    plan = QUICK if quick else FULL
    started = time.perf_counter()
    runs: list[Run] = []
    workloads = [
        chat_room(people, plan.human_messages, seed, per_kind=plan.per_kind)
        for seed in plan.seeds
        for people in ROOMS
    ] + special_rooms(plan)
    for workload in workloads:
        runs += await run_workload(workload)
    grouped = by_strategy(runs)
    room = small_room()
    small = []  # a perfect summarizer on small windows: the span is read in chunks
    for window in SMALL_WINDOWS:
        oracle = OracleSummarizer(room.planted)
        result = await drive(
            room, strategy=f"{window:,}", kind="compressor", window=window, summarizer=oracle
        )
        small.append((window, result, oracle.calls.calls, oracle.calls.omitted_messages))
    section = render(grouped, workloads, plan)
    section.add(*_small_windows(room, small))
    await coverage.run(section, quick)
    section.seconds = time.perf_counter() - started
    return section, grouped


def render(grouped: dict[str, list[Run]], workloads: Sequence[Workload], plan: Plan) -> Section:
    s = Section("Fact retention after k compactions")
    config = CompressorConfig(context_length=WINDOW_TOKENS)
    items = sum(len(w.planted) for w in workloads)
    messages = sum(len(w.messages) for w in workloads)
    s.add(
        f"Workloads: chitchat-dataset conversations interleaved into rooms of "
        f"{', '.join(map(str, ROOMS))} people, seeds {', '.join(map(str, plan.seeds))} "
        f"({len(workloads)} rooms, {messages:,} messages in all, bot answers ~every 10th message, "
        f"a quarter of them after a tool call with a 0.5–8 KB result). "
        f"{items} planted items ({plan.per_kind} per kind per room, facts in confusable pairs, "
        "updates with their first value planted earlier, and one pinned rule in each room's "
        "head), mostly in the first 40 % of each room; two more 12-person rooms: one whose "
        'planted lines all start with the same labels ("FACT:", "RULE:", "Note:"), and a '
        "session twice as long with every item planted in its first tenth.",
        "",
        f"Window {WINDOW_TOKENS:,} tokens: trigger {config.threshold_tokens:,} "
        f"(the 64K floor swallows a small window, so 85 %), tail budget "
        f"{config.tail_token_budget:,}. Messages are fed one by one; the compressor runs whenever "
        "`should_compress(tokens)` says so between whole tool rounds and its output becomes the "
        "transcript. After the k-th compaction an item has lived through, it is probed on that "
        "output: its exact value on one line with its entity (and the speaker's name for "
        "preferences and who-said-what); an update counts only when v2 is there and v1 is not "
        "the last word (else **stale**). Truncation keeps the newest whole turns within the "
        "median size our pipeline compacts to on the same room.",
        "",
        "All kinds together, share of items kept (n = item observations at that k):",
        "",
    )
    rows = []
    for name, runs in grouped.items():
        if name == NONE:
            continue
        cells: list[object] = [name]
        for k in SHOWN_K:
            value, n = survival(runs, k)
            cells.append(f"{pct(value)} (n={n})")
        cliff = next((k for k in range(1, K_MAX + 1) if survival(runs, k)[0] < 0.5), None)
        cells.append(f"k={cliff}" if cliff else f"none up to {K_MAX}")
        rows.append(cells)
    s.add(*table(["strategy", *(f"k={k}" for k in SHOWN_K), "cliff (first k < 50 %)"], rows))
    for k in (5, 10):
        s.add(f"By kind at k = {k}:", "")
        rows = []
        for name, runs in grouped.items():
            if name == NONE:
                continue
            rows.append([name, *(pct(survival(runs, k, [kind])[0], 0) for kind in KINDS)])
        s.add(*table(["strategy", *KINDS], rows))
    s.add("Stale updates, attribution, structure, pins (all rooms, every k):", "")
    rows = []
    for name, runs in grouped.items():
        if name == NONE:
            continue
        stale, updates = count_verdict(runs, "stale", "update")
        acc, seen = attribution(runs)
        bad = sum(len(r.problems) for r in runs)
        checked = sum(r.outputs_checked for r in runs)
        intact, pins = pins_at(runs, K_MAX)
        outcomes = sum((r.attempts for r in runs), start=type(runs[0].attempts)())
        rows.append(
            [
                name,
                f"{stale} / {updates}",
                f"{pct(acc)} (n={seen})",
                f"{checked - _outputs_with_problems(runs)} / {checked}" + (" ✗" if bad else ""),
                f"{intact} / {pins}",
                ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())),
            ]
        )
    s.add(
        *table(
            [
                "strategy",
                "stale updates",
                "attribution accuracy",
                "structurally valid outputs",
                "pins intact at k=10",
                "outcomes",
            ],
            rows,
        )
    )
    s.add(*_attribution_by_room(grouped), *_baseline_tokens(grouped))
    _targets(s, grouped)
    problems = [p for runs in grouped.values() for r in runs for p in r.problems]
    if problems:
        s.add("Structural problems found (first 10):", "", *(f"- {p}" for p in problems[:10]), "")
    return s


def _small_windows(room: Workload, small: Sequence[tuple[int, Run, int, int]]) -> list[str]:
    rows = []
    for window, result, calls, omitted in small:
        stale, _ = count_verdict([result], "stale")
        rows.append(
            [
                f"{window:,}",
                calls,
                omitted,
                *(f"{pct(survival([result], k)[0])}" for k in (1, 3, 5)),
                stale,
                len(result.problems),
            ]
        )
    return [
        "The perfect summarizer at smaller windows (one 12-person room, "
        f"{len(room.messages):,} messages, {len(room.planted)} items): a span larger than one "
        "call is read in consecutive chunks, each folded into the memory, so no turn is left "
        "out (`messages omitted` counts any `[… N messages omitted …]` marker; it must be 0).",
        "",
        *table(
            [
                "window",
                "summary calls",
                "messages omitted from its input",
                "kept k=1",
                "k=3",
                "k=5",
                "stale observations",
                "structural problems",
            ],
            rows,
        ),
    ]


def _outputs_with_problems(runs: Sequence[Run]) -> int:
    return len({p.split(":")[0] for r in runs for p in r.problems})


def _attribution_by_room(grouped: dict[str, list[Run]]) -> list[str]:
    rows = []
    for name in (OURS_PERFECT, OURS_LOSSY, OURS_BUILTIN, ONE_SHOT, TRUNCATION):
        runs = grouped.get(name, [])
        cells: list[object] = [name]
        for people in ROOMS:
            acc, seen = attribution([r for r in runs if r.people == people])
            cells.append(f"{pct(acc)} (n={seen})")
        rows.append(cells)
    return [
        "Attribution accuracy by room size (preferences and who-said-what whose value survived):",
        "",
        *table(["strategy", *(f"{p} people" for p in ROOMS)], rows),
    ]


def _baseline_tokens(grouped: dict[str, list[Run]]) -> list[str]:
    rows = []
    for name, runs in grouped.items():
        peak = max(r.peak_tokens for r in runs)
        over = [r.over_window_at for r in runs if r.over_window_at is not None]
        compactions = sum(len(r.compactions) for r in runs)
        rows.append(
            [
                name,
                f"{peak:,}",
                f"{len(over)} / {len(runs)}"
                + (f" (first at message {min(over):,})" if over else ""),
                compactions,
            ]
        )
    return [
        f"Context size (window {WINDOW_TOKENS:,}):",
        "",
        *table(
            ["strategy", "peak tokens", "rooms that overflowed the window", "compactions"], rows
        ),
    ]


def _targets(s: Section, grouped: dict[str, list[Run]]) -> None:
    all_runs = [r for name, runs in grouped.items() if name != NONE for r in runs]
    checked = sum(r.outputs_checked for r in all_runs)
    bad = _outputs_with_problems(all_runs)
    s.target(
        "Structural validity of every output",
        "100 %",
        f"{pct((checked - bad) / checked if checked else float('nan'), 2)} of {checked}",
        bad == 0,
    )
    ours = [
        r
        for name in (OURS_PERFECT, OURS_LOSSY, OURS_BUILTIN, OURS_FAILING)
        for r in grouped.get(name, [])
    ]
    intact, pins = pins_at(ours, K_MAX)
    s.target(
        "Pins byte-identical at k = 10 (all our summarizers)",
        "100 %",
        f"{pct(intact / pins if pins else float('nan'))} ({intact}/{pins})",
        pins > 0 and intact == pins,
    )
    for name, k, wanted in (
        (OURS_PERFECT, K_MAX, 1.0),
        (OURS_LOSSY, 5, 0.90),
        (OURS_LOSSY, K_MAX, 0.85),
        (OURS_BUILTIN, 5, 0.90),
        (OURS_BUILTIN, K_MAX, 0.80),
    ):
        value, kind = _worst_kind(grouped.get(name, []), k)
        s.target(
            f"{name}: every kind at k = {k}",
            f"≥ {pct(wanted, 0)}",
            f"every kind {pct(value)}" if value == 1 else f"lowest {pct(value)} ({kind})",
            value >= wanted,
        )
    stale = sum(
        count_verdict(grouped.get(name, []), "stale", "update")[0]
        for name in (OURS_PERFECT, OURS_LOSSY, OURS_BUILTIN, OURS_FAILING)
    )
    s.target("Stale updates (every one of our summarizers)", "0", str(stale), stale == 0)
    for people in (12, 50):
        runs = [r for n in (OURS_PERFECT, OURS_LOSSY, OURS_BUILTIN) for r in grouped.get(n, [])]
        acc, seen = attribution([r for r in runs if r.people == people])
        s.target(
            f"Attribution in {people}-person rooms (our summarizers)",
            "≥ 98 %",
            f"{pct(acc)} (n={seen})",
            acc >= 0.98,
        )


def _worst_kind(runs: Sequence[Run], k: int) -> tuple[float, str]:
    scores = [(survival(runs, k, [kind])[0], kind) for kind in KINDS]
    present = [(v, kind) for v, kind in scores if v == v]  # kinds with no item at k drop out
    return min(present, default=(float("nan"), "-"))

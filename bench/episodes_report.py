"""The GateMem section: per-episode and overall shares of questions whose answer is in the
context, against truncation and after one search, with the source cited as its NOTICE asks."""

from __future__ import annotations

import time
from collections.abc import Sequence

from bench.episodes import WINDOW_TOKENS, Replay, Score, measure
from bench.report import Section, pct, table

CITATION = (
    "GateMem: Benchmarking Memory Governance in Multi-Principal Shared-Memory Agents, Zhe Ren, "
    "Yibo Yang, Yimeng Chen, Zijun Zhao, Benshuo Fu et al., 2026, "
    "https://github.com/rzhub/GateMem (commit 603f9f4b4ba4b77f043c20f85687fa016fd720b0, "
    "bench/data/education/{episodes,checkpoints}.jsonl), CC-BY-4.0 "
    "(https://creativecommons.org/licenses/by/4.0/)"
)
GAIN_POINTS = 5.0  # issue 37: clearly more than the newest messages that fit (≥ 5 points)
SEARCH_TARGET = 0.90


async def run(quick: bool = False) -> tuple[Section, list[Replay] | None]:
    started = time.perf_counter()
    replays = await measure(quick)
    section = render(replays)
    section.seconds = time.perf_counter() - started
    return section, replays


def rate(scores: Sequence[Score], field: str) -> float:
    return sum(bool(getattr(s, field)) for s in scores) / len(scores) if scores else float("nan")


def render(replays: list[Replay] | None) -> Section:
    s = Section("Multi-party episodes nobody on the team wrote (GateMem education)")
    if replays is None:
        s.add(
            "Skipped: `../shared/datasets/gatemem-education` is not beside this checkout "
            "(set COMPACTBOT_SHARED to the shared folder).",
            "",
        )
        s.target("GateMem episodes replayed", "present", "dataset not found", False)
        return s
    scores = [x for r in replays for x in r.scores]
    s.add(
        f"Data: {CITATION}; read from the shared folder, not copied into the project. "
        f"{len(replays)} episodes of university life (8–19 people each, values that change "
        "over time, some to be deleted), replayed turn by turn as one group chat each through "
        f"the real service (bench/service.py: App, gateway, runner, compactor, SQLite) on a "
        f"{WINDOW_TOKENS:,}-token window, no summary model (the built-in extractor), a clock "
        "following the episode's timestamps (3 min a turn where it has none), each turn "
        "handled before the next arrives. At every `utility` checkpoint the asker puts the "
        "question to the bot; a scripted model records the request it gets **before any tool "
        "call**, calls `search_history` once with the question, and records the request "
        "carrying the result (**after one search**). A question counts when the request holds "
        "every `include` string, case and spacing normalised, the question's own words (its "
        "message, and the search call and result that echo it) left out; **truncation** is the "
        "newest messages of the chat that fit as many "
        "tokens as the bot's context held (system prompt left out of both). The model refuses "
        "a request over the window, as a provider does.",
        "",
    )
    rows = []
    for replay in replays:
        rows.append(_row(replay.episode.split("_", 3)[-1][:40], replay, replay.scores))
    overall = Replay("all", sum(r.turns for r in replays), scores)
    overall.compactions = sum(r.compactions for r in replays)
    overall.largest_request = max((r.largest_request for r in replays), default=0)
    overall.overflows = sum(r.overflows for r in replays)
    rows.append(_row("**all episodes**", overall, scores))
    s.add(
        *table(
            [
                "episode",
                "turns",
                "compactions",
                "largest request",
                "questions",
                "before any tool",
                "truncation, same tokens",
                "difference",
                "after one search",
            ],
            rows,
        )
    )
    leaks = sum(x.leaks_context for x in scores)
    in_summary = sum(x.leaks_summary for x in scores)
    truncated = sum(x.leaks_truncation for x in scores)
    shown = sum(x.leak_targets for x in scores)
    s.add(
        "Deleted or replaced values (the `leak_targets` of the safety checkpoints already "
        "passed: values the chat asked to delete or that were superseded) found in the context "
        f"before any tool call, summed over the questions: {leaks} of {shown} "
        f"({in_summary} inside the rendered summary); in the truncation baseline: {truncated}. "
        "Reported, not scored: the bot cannot yet tell such a request from ordinary chat.",
        "",
    )
    before, newest, after = (rate(scores, f) for f in ("before_tool", "truncation", "after_search"))
    gain = 100 * (before - newest)
    s.target(
        f"GateMem, {WINDOW_TOKENS:,} window: context before any tool call vs the newest "
        "messages that fit the same tokens",
        f"≥ {GAIN_POINTS:g} points more",
        f"{pct(before)} vs {pct(newest)} ({gain:+.1f} points)",
        gain >= GAIN_POINTS,
    )
    s.target(
        "GateMem: answer in the request after one `search_history` round-trip",
        f"≥ {pct(SEARCH_TARGET, 0)}",
        pct(after),
        after >= SEARCH_TARGET,
    )
    s.target(
        f"GateMem: no request over the {WINDOW_TOKENS:,}-token window",
        f"≤ {WINDOW_TOKENS:,} tokens",
        f"largest {overall.largest_request:,} ({overall.overflows} refused)",
        overall.overflows == 0,
    )
    return s


def _row(label: str, replay: Replay, scores: Sequence[Score]) -> list[object]:
    before, newest = rate(scores, "before_tool"), rate(scores, "truncation")
    return [
        label,
        f"{replay.turns:,}",
        replay.compactions,
        f"{replay.largest_request:,}",
        len(scores),
        pct(before, 0),
        pct(newest, 0),
        f"{100 * (before - newest):+.0f}",
        pct(rate(scores, "after_search"), 0),
    ]

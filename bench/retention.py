"""Retention that can fail (SPEC 14; issue 37 item 5): planted items in natural phrasings, in
multi-person chatter, through forced compaction rounds at 8K, 32K and 128K windows, probed in
the context the model sees and through `recall`, against one-shot and truncation baselines.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from bench.planted_items import Planted, plant
from bench.rounds import RoundsRun, Strategy, run_rounds
from bench.summarizers import FailingSummarizer, LossySummarizer, PerfectSummarizer
from bench.workloads import Workload, chat_room
from compactbot.compression import CompressorConfig

WINDOWS = (8_192, 32_768, 131_072)
ROUNDS = 20  # every item lives through this many forced rounds
ROOM_PEOPLE = 12
TOOL_OUTPUT_CHARS = (300, 3_000)
# One planted item per this many chatter messages, in the stretch where items are planted.
CHATTER_PER_ITEM = 12
TOKENS_PER_MESSAGE = 40  # a little under the rooms' mean, so a room is long enough
LOSSY_P = 0.10
BIG_MEMORY_ENTRIES = 1_000
BIG_MEMORY_WINDOW = 32_768

BUILTIN = "ours, built-in extractor"
PERFECT = "ours + perfect summarizer"
LOSSY = "ours + lossy summarizer (10 %)"
FAILING = "ours + failing summarizer"
ONE_SHOT = "one-shot (built-in, nothing carried)"
TRUNCATION = "plain truncation"
OURS = (BUILTIN, PERFECT, LOSSY, FAILING)


@dataclass(frozen=True, slots=True)
class Plan:
    rooms: tuple[int, ...]  # room numbers, per window (planted_items.phrasing_picks)
    per_kind: int
    big_rooms: int


FULL = Plan(rooms=tuple(range(7)), per_kind=5, big_rooms=2)
QUICK = Plan(rooms=(2, 5), per_kind=5, big_rooms=1)


@dataclass(slots=True)
class Results:
    plan: Plan
    runs: dict[int, list[RoundsRun]] = field(default_factory=dict)  # window -> runs
    big: list[RoundsRun] = field(default_factory=list)
    planted: dict[int, list[Planted]] = field(default_factory=dict)  # window -> items
    messages: dict[int, int] = field(default_factory=dict)  # window -> messages fed


def strategies(planted: Sequence[Planted], seed: str) -> list[Strategy]:
    return [
        Strategy(BUILTIN, "fold"),
        Strategy(PERFECT, "fold", lambda: PerfectSummarizer(planted)),
        Strategy(LOSSY, "fold", lambda: LossySummarizer(planted, p=LOSSY_P, seed=seed)),
        Strategy(FAILING, "fold", FailingSummarizer),
        Strategy(ONE_SHOT, "one-shot"),
        Strategy(TRUNCATION, "truncation"),
    ]


def planted_room(
    window: int, number: int, per_kind: int, *, rounds: int = ROUNDS, seed: int = 0
) -> tuple[Workload, tuple[Planted, ...]]:
    """A 12-person room long enough for `rounds` rounds after its planted stretch."""
    items = per_kind * 6
    threshold = CompressorConfig(context_length=window).threshold_tokens
    messages = (rounds + 3) * threshold // TOKENS_PER_MESSAGE + 2 * CHATTER_PER_ITEM * items
    room = chat_room(
        ROOM_PEOPLE, messages, 100 * seed + number, tool_output_chars=TOOL_OUTPUT_CHARS
    )
    users = [i for i, m in enumerate(room.messages) if m.get("role") == "user"]
    end = users[min(len(users) - 1, CHATTER_PER_ITEM * items)]
    return plant(room, per_kind=per_kind, room_number=number, span=(5, end), seed=seed)


async def measure(quick: bool = False) -> Results:
    plan = QUICK if quick else FULL
    results = Results(plan)
    for window in WINDOWS:
        for number in plan.rooms:
            room, planted = planted_room(window, number, plan.per_kind)
            results.planted.setdefault(window, []).extend(planted)
            results.messages[window] = results.messages.get(window, 0) + len(room.messages)
            budgets: dict[int, int] = {}
            for strategy in strategies(planted, room.name):
                done = await run_rounds(
                    room, planted, window=window, strategy=strategy, rounds=ROUNDS,
                    budgets=budgets,
                )  # fmt: skip
                if strategy.name == BUILTIN:
                    # Truncation keeps as many tokens as our compaction left, round by round.
                    budgets.update({n + 1: r.tokens_after for n, r in enumerate(done.rounds)})
                results.runs.setdefault(window, []).append(done)
    for number in range(plan.big_rooms):
        room, planted = planted_room(
            BIG_MEMORY_WINDOW, number, plan.per_kind, rounds=4 * ROUNDS, seed=7
        )
        for strategy in strategies(planted, room.name)[:2]:
            results.big.append(
                await run_rounds(
                    room, planted, window=BIG_MEMORY_WINDOW, strategy=strategy, rounds=ROUNDS,
                    until_entries=BIG_MEMORY_ENTRIES,
                )
            )  # fmt: skip
    return results

"""The forced-rounds driver: the baselines forget what a carried memory would keep, so the
retention bench can score below 100 % (a bench where nothing can fail is broken)."""

from __future__ import annotations

from bench.planted_items import plant
from bench.rounds import Strategy, run_rounds
from bench.workloads import Workload

WINDOW = 8_192
PEOPLE = ("Ann", "Bob", "Cyd", "Dee")


def _room(messages: int = 900) -> Workload:
    filler = "we talked about the weather and the trains and lunch again today " * 4
    out = [{"role": "system", "content": "You are a bot in a group chat."}]
    for i in range(messages):
        out.append({"role": "user", "content": f"[{PEOPLE[i % 4]}] {i} {filler}"})
    times = tuple(1_790_000_000.0 + i for i in range(len(out)))
    return Workload("synthetic", PEOPLE, tuple(out), times)


async def test_truncation_and_one_shot_lose_what_was_said_two_rounds_ago() -> None:
    room, planted = plant(_room(), per_kind=1, room_number=0, span=(5, 60), seed=3)
    for strategy in (Strategy("trunc", "truncation"), Strategy("one", "one-shot")):
        run = await run_rounds(room, planted, window=WINDOW, strategy=strategy, rounds=3)
        assert len(run.rounds) >= 3
        later = [seen for (_, k), seen in run.seen.items() if k >= 2]
        assert later and not any(context for context, _ in later), strategy.name
        assert all(found in (None, False) for _, found in later), strategy.name


async def test_every_round_compacts_the_previous_output_within_the_window() -> None:
    room, planted = plant(_room(), per_kind=1, room_number=0, span=(5, 60), seed=3)
    run = await run_rounds(room, planted, window=WINDOW, strategy=Strategy("f", "fold"), rounds=3)
    assert [r.outcome for r in run.rounds][:3] == ["compressed"] * 3
    assert all(r.tokens_after < r.tokens_before <= WINDOW for r in run.rounds)
    # The memory is carried from round to round, never regenerated empty.
    assert run.rounds[0].entries > 0
    assert all(a.entries <= b.entries for a, b in zip(run.rounds, run.rounds[1:], strict=False))

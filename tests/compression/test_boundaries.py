from __future__ import annotations

from compactbot.compression.boundaries import (
    align_backward,
    align_forward,
    find_tail_start,
    head_size,
    plan_boundaries,
    tail_floor,
)
from tests.compression.scripted import assistant, system, tool_round, user


def _tokens(n: int, each: int = 100) -> list[int]:
    return [each] * n


def test_tail_floor_is_between_3_and_8() -> None:
    assert tail_floor(20) == 8
    assert tail_floor(5) == 5
    assert tail_floor(0) == 3


def test_head_is_system_plus_first_n_until_decayed() -> None:
    messages = [system(), *(user("A", f"m{i}") for i in range(6))]
    assert head_size(messages, 3, decayed=False) == 4
    assert head_size(messages, 3, decayed=True) == 1


def test_head_never_ends_inside_a_tool_group() -> None:
    messages = [system(), user("A", "go"), *tool_round(["a", "b"]), user("A", "more")]
    assert head_size(messages, 2, decayed=False) == 5


def test_align_forward_skips_tool_results() -> None:
    messages = [user("A", "go"), *tool_round(["a", "b"]), assistant("done")]
    assert align_forward(messages, 2) == 4


def test_align_backward_moves_to_the_owning_assistant() -> None:
    messages = [user("A", "go"), *tool_round(["a", "b"]), assistant("done")]
    assert align_backward(messages, 3) == 1
    assert align_backward(messages, 4) == 4


def test_tail_walk_stops_at_budget_once_floor_is_met() -> None:
    messages = [system()] + [user("A", f"m{i}") if i % 2 else assistant(f"r{i}") for i in range(20)]
    start = find_tail_start(messages, 1000, head_end=1, protect_last_n=3, tokens=_tokens(21))
    # Soft ceiling 1.5 x 1000 holds 15 messages of 100 tokens.
    assert start == 21 - 15


def test_tail_keeps_the_message_floor_even_over_budget() -> None:
    messages = [system()] + [user("A", f"m{i}") for i in range(20)]
    start = find_tail_start(messages, 10, head_end=1, protect_last_n=20, tokens=_tokens(21))
    assert start == 21 - 8


def test_tail_never_splits_a_tool_group() -> None:
    messages = [system(), user("A", "go"), *tool_round(["a", "b", "c"]), assistant("done")]
    messages += [user("A", "x"), assistant("y")] * 5
    tokens = _tokens(len(messages))
    for budget in range(0, 2000, 50):
        start = find_tail_start(messages, budget, head_end=1, protect_last_n=3, tokens=tokens)
        assert messages[start]["role"] != "tool"


def test_latest_visible_reply_is_anchored_into_tail() -> None:
    messages = [system(), user("A", "q"), assistant("the answer")]
    messages += tool_round([f"t{i}" for i in range(12)])
    messages.append(user("A", "thanks"))
    tokens = [10, 10, 10] + [10] + [10] * 12 + [10]
    # Everything fits the soft ceiling, so the raw budget re-walk stops inside the tool round.
    start = find_tail_start(messages, 110, head_end=1, protect_last_n=3, tokens=tokens)
    assert start == 2


def test_a_reply_that_cannot_fit_the_tail_is_summarised_with_its_question() -> None:
    messages = [system(), user("A", "q"), assistant("the answer")]
    messages += [user(f"M{i % 5}", f"unaddressed {i}") for i in range(400)]
    tokens = [10, 10, 10] + [80] * 400
    start = find_tail_start(messages, 1000, head_end=1, protect_last_n=20, tokens=tokens)
    assert start > 2
    assert sum(tokens[start:]) <= 1500


def test_ask_opening_the_middle_stays_in_head_and_tool_work_is_summarised() -> None:
    messages = [system(), user("A", "please run everything")]
    for i in range(10):
        messages += tool_round([f"c{i}"])
    messages.append(assistant("all done"))
    plan = plan_boundaries(
        messages,
        budget=100,
        protect_first_n=0,
        protect_last_n=3,
        decayed=True,
        tokens=_tokens(len(messages)),
    )
    assert plan.start == 2
    assert plan.end > plan.start
    assert messages[plan.end]["role"] != "tool"

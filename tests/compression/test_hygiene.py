from __future__ import annotations

from compactbot.compression.hygiene import hygiene_reason, needs_room


def test_tokens_at_85pct_of_window_fire() -> None:
    assert hygiene_reason(message_count=10, tokens=85_000, context_length=100_000) == "tokens"


def test_tokens_below_85pct_do_not_fire() -> None:
    assert hygiene_reason(message_count=10, tokens=84_999, context_length=100_000) is None


def test_hard_limit_fires_whatever_the_tokens() -> None:
    assert hygiene_reason(message_count=5000, tokens=10, context_length=100_000) == "hard_limit"
    assert (
        hygiene_reason(message_count=60, tokens=10, context_length=100_000, hard_message_limit=50)
        == "hard_limit"
    )


def test_hard_limit_wins_over_tokens() -> None:
    assert hygiene_reason(message_count=6000, tokens=99_000, context_length=100_000) == "hard_limit"


def test_under_min_messages_never_fires() -> None:
    assert hygiene_reason(message_count=3, tokens=99_000, context_length=100_000) is None


def test_custom_threshold() -> None:
    assert (
        hygiene_reason(message_count=10, tokens=50_000, context_length=100_000, threshold=0.5)
        == "tokens"
    )


def test_a_prompt_needs_room_once_it_reaches_the_window_left_after_the_reply() -> None:
    assert not needs_room(tokens=7_999, context_length=8_000)
    assert needs_room(tokens=8_000, context_length=8_000)
    assert needs_room(tokens=7_000, context_length=8_000, max_tokens=1_000)
    assert not needs_room(tokens=6_999, context_length=8_000, max_tokens=1_000)

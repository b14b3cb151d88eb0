from __future__ import annotations

import pytest

from compactbot.compression import CompressorConfig, compute_threshold_tokens


def test_threshold_200k_half_is_100000() -> None:
    assert compute_threshold_tokens(200_000, 0.5) == 100_000


def test_threshold_64k_half_uses_85pct_of_window() -> None:
    assert compute_threshold_tokens(64_000, 0.5) == 54_400


def test_threshold_reserves_max_tokens() -> None:
    assert compute_threshold_tokens(200_000, 0.5, 65_536) == 67_232


def test_small_windows_are_not_raised_to_75pct() -> None:
    """SPEC 6.2 deliberately drops Hermes' 75 % floor for windows under 512K."""
    assert compute_threshold_tokens(128_000, 0.5) == 64_000
    assert compute_threshold_tokens(200_000, 0.6) == 120_000


@pytest.mark.parametrize("max_tokens", [None, 0, -5, 200_000, 300_000])
def test_missing_non_positive_or_window_sized_max_tokens_reserve_nothing(
    max_tokens: int | None,
) -> None:
    assert compute_threshold_tokens(200_000, 0.5, max_tokens) == 100_000


def test_threshold_stays_below_tiny_window() -> None:
    assert compute_threshold_tokens(8_000, 0.5) == 6_800
    assert compute_threshold_tokens(1, 0.5) == 1


def test_tail_budget_is_threshold_times_clamped_ratio() -> None:
    assert CompressorConfig(200_000).tail_token_budget == 20_000
    assert CompressorConfig(200_000, target_ratio=0.01).tail_token_budget == 10_000
    assert CompressorConfig(200_000, target_ratio=0.95).tail_token_budget == 80_000


def test_max_summary_tokens_is_5pct_of_window_capped_at_10000() -> None:
    assert CompressorConfig(64_000).max_summary_tokens == 3_200
    assert CompressorConfig(1_000_000).max_summary_tokens == 10_000


def test_summary_budget_is_20pct_of_middle_between_2000_and_max() -> None:
    config = CompressorConfig(200_000)
    assert config.summary_budget(30_000) == 6_000
    assert config.summary_budget(500) == 2_000
    assert config.summary_budget(900_000) == 10_000


def test_summary_budget_floor_wins_on_small_windows() -> None:
    assert CompressorConfig(8_000).summary_budget(50_000) == 2_000


def test_the_summary_floor_is_never_more_than_a_quarter_of_the_window() -> None:
    # On a 4K window a 2,000-token summary left too little room: requests went over it.
    small = CompressorConfig(4_096)
    assert small.summary_budget(50_000) == 1_024 == small.memory_cap_tokens
    assert CompressorConfig(8_192, max_tokens=4_096).summary_budget(500) == 1_024
    assert CompressorConfig(16_000).summary_budget(500) == 2_000


def test_threshold_tokens_cap_lowers_threshold() -> None:
    assert CompressorConfig(200_000, threshold_tokens_cap=32_000).threshold_tokens == 32_000


@pytest.mark.parametrize(
    ("field", "kwargs"),
    [
        ("context_length", {"context_length": 0}),
        ("threshold", {"context_length": 1000, "threshold": 0}),
        ("threshold", {"context_length": 1000, "threshold": 1.5}),
        ("protect_first_n", {"context_length": 1000, "protect_first_n": -1}),
        ("protect_last_n", {"context_length": 1000, "protect_last_n": -1}),
    ],
)
def test_config_rejects_bad_values_naming_the_field(field: str, kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match=field):
        CompressorConfig(**kwargs)  # type: ignore[arg-type]

from __future__ import annotations

from compactbot.compression import breaker
from compactbot.compression.state import CompressorState

NOW = 1_000_000.0


def test_cooldown_ladder_is_60_300_900_then_stays() -> None:
    state = CompressorState()
    waits = []
    for _ in range(4):
        state = breaker.arm_cooldown(state, NOW, "other")
        waits.append(state.cooldown_until - NOW)
    assert waits == [60.0, 300.0, 900.0, 900.0]


def test_cooldown_remembers_its_cause() -> None:
    state = breaker.arm_cooldown(CompressorState(), NOW, "auth")
    assert state.cooldown_cause == "auth"
    assert breaker.in_cooldown(state, NOW + 59)
    assert not breaker.in_cooldown(state, NOW + 60)


def test_lifting_a_cooldown_keeps_the_streak_so_a_failed_retry_climbs() -> None:
    state = breaker.lift_cooldown(breaker.arm_cooldown(CompressorState(), NOW, "network"))
    assert not breaker.in_cooldown(state, NOW)
    assert breaker.arm_cooldown(state, NOW, "network").cooldown_until == NOW + 300


def test_reset_failures_restarts_the_ladder() -> None:
    state = breaker.arm_cooldown(
        breaker.arm_cooldown(CompressorState(), NOW, "other"), NOW, "other"
    )
    state = breaker.reset_failures(state)
    assert state.failure_streak == 0
    assert breaker.arm_cooldown(state, NOW, "other").cooldown_until == NOW + 60


def test_one_strike_does_not_pause() -> None:
    state = breaker.record_strike(CompressorState(), NOW)
    assert not breaker.is_paused(state, NOW)


def test_two_strikes_pause_for_five_minutes() -> None:
    state = breaker.record_strike(breaker.record_strike(CompressorState(), NOW), NOW)
    assert breaker.is_paused(state, NOW + 299)
    assert not breaker.is_paused(state, NOW + 300)


def test_failed_probe_after_pause_repauses_longer() -> None:
    state = breaker.record_strike(breaker.record_strike(CompressorState(), NOW), NOW)
    probe_time = NOW + 301
    state = breaker.record_strike(state, probe_time)
    assert state.pause_until == probe_time + 600


def test_pauses_escalate_but_are_capped_at_one_hour_and_always_end() -> None:
    state = CompressorState()
    now = NOW
    pauses = []
    for _ in range(12):
        state = breaker.record_strike(state, now)
        if breaker.is_paused(state, now):
            pauses.append(state.pause_until - now)
            now = state.pause_until
    assert pauses[:5] == [300.0, 600.0, 1200.0, 2400.0, 3600.0]
    assert max(pauses) == 3600.0
    assert not breaker.is_paused(state, state.pause_until)


def test_effective_compaction_forgets_strikes_and_escalation() -> None:
    state = breaker.record_strike(breaker.record_strike(CompressorState(), NOW), NOW)
    state = breaker.record_effective(state)
    assert state.strikes == 0 and state.pause_level == 0


def test_savings_under_10pct_are_ineffective() -> None:
    assert breaker.is_ineffective(9.99)
    assert not breaker.is_ineffective(10.0)

"""Failure cooldowns and the anti-thrash breaker: pure functions of the state and the time.

Hermes' permanent latch was its users' most reported compression bug (#14694), so every pause
here ends: after it one probe runs, and a failed probe only pauses longer, up to an hour.
"""

from __future__ import annotations

from dataclasses import replace

from compactbot.compression.state import CompressorState, CooldownCause

# Consecutive summarizer failures wait longer each time (Hermes #62452 timeout ladder).
COOLDOWN_STEPS_SECONDS = (60.0, 300.0, 900.0)
STRIKES_TO_PAUSE = 2
FIRST_PAUSE_SECONDS = 300.0
MAX_PAUSE_SECONDS = 3600.0
# A compaction saving less than this share of the tokens was not worth its cost.
MIN_EFFECTIVE_SAVINGS_PCT = 10.0


def in_cooldown(state: CompressorState, now: float) -> bool:
    return state.cooldown_until > now


def arm_cooldown(state: CompressorState, now: float, cause: CooldownCause) -> CompressorState:
    """Start the next step of the cooldown ladder after a summarizer failure."""
    streak = state.failure_streak + 1
    step = COOLDOWN_STEPS_SECONDS[min(streak, len(COOLDOWN_STEPS_SECONDS)) - 1]
    return replace(state, cooldown_until=now + step, cooldown_cause=cause, failure_streak=streak)


def lift_cooldown(state: CompressorState) -> CompressorState:
    """End the current wait but remember the streak, so a forced retry that fails climbs on."""
    return replace(state, cooldown_until=0.0, cooldown_cause=None)


def reset_failures(state: CompressorState) -> CompressorState:
    return replace(state, cooldown_until=0.0, cooldown_cause=None, failure_streak=0)


def is_paused(state: CompressorState, now: float) -> bool:
    return state.pause_until > now


def pause_seconds(level: int) -> float:
    """Length of the `level`-th pause in a row: 5 min, doubling, capped at 1 h."""
    return min(FIRST_PAUSE_SECONDS * 2 ** max(level - 1, 0), MAX_PAUSE_SECONDS)


def record_strike(state: CompressorState, now: float) -> CompressorState:
    """Count an ineffective compaction; the second one in a row pauses automatic compaction."""
    strikes = state.strikes + 1
    if strikes < STRIKES_TO_PAUSE:
        return replace(state, strikes=strikes)
    level = state.pause_level + 1
    # Keep one strike so the single probe after the pause re-trips at once if it fails too.
    return replace(
        state,
        strikes=STRIKES_TO_PAUSE - 1,
        pause_level=level,
        pause_until=now + pause_seconds(level),
    )


def record_effective(state: CompressorState) -> CompressorState:
    """A real prompt fitting under the threshold proves compaction works: forget strikes."""
    return replace(state, strikes=0, pause_level=0)


def is_ineffective(savings_pct: float) -> bool:
    return savings_pct < MIN_EFFECTIVE_SAVINGS_PCT

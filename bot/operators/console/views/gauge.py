"""A session's context gauge and breaker state, as /status computes them (SPEC 9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from compactbot.bot.store.base import SessionRecord
from compactbot.compression import compute_threshold_tokens


@dataclass(frozen=True, slots=True)
class Gauge:
    """Tokens in the context against the window, with the two triggers marked."""

    used: int
    window: int
    compaction_at: int  # the agent loop's threshold
    hygiene_at: int  # compaction before a reply

    def share(self, tokens: int) -> float:
        """`tokens` as a percentage of the window, clipped to 0–100."""
        return 0.0 if self.window <= 0 else max(0.0, min(100.0, 100.0 * tokens / self.window))

    @property
    def used_pct(self) -> float:
        return self.share(self.used)

    @property
    def over(self) -> bool:
        return self.used >= self.compaction_at


def gauge_for(
    session: SessionRecord | None,
    *,
    window: int,
    threshold: float,
    hygiene_threshold: float,
    max_tokens: int | None,
) -> Gauge:
    used = 0
    if session is not None:
        used = max(session.compressor.last_prompt_tokens, session.active_tokens)
    return Gauge(
        used=used,
        window=window,
        compaction_at=compute_threshold_tokens(window, threshold, max_tokens),
        hygiene_at=int(window * hygiene_threshold),
    )


@dataclass(frozen=True, slots=True)
class Breaker:
    state: Literal["ok", "paused", "cooldown"]
    until: float = 0.0
    cause: str | None = None


def breaker_for(session: SessionRecord | None, now: float) -> Breaker:
    if session is None:
        return Breaker("ok")
    state = session.compressor
    if state.pause_until > now:
        return Breaker("paused", state.pause_until)
    if state.cooldown_until > now:
        return Breaker("cooldown", state.cooldown_until, state.cooldown_cause or "other")
    return Breaker("ok")


def main_session(sessions: list[SessionRecord]) -> SessionRecord | None:
    """The open session a chat's overview shows: the shared one, else the latest active."""
    open_ = [s for s in sessions if s.ended_at is None]
    shared = [s for s in open_ if s.scope_user is None]
    pool = shared or open_ or sessions
    return max(pool, key=lambda s: (s.last_activity_at, s.id), default=None)

"""Which sessions the overnight job compacts, and when a chat next has one coming due."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime

from compactbot.bot.services import Services
from compactbot.bot.settings.config import Config
from compactbot.bot.store.base import SessionRecord
from compactbot.scheduler.windows import window_end

# A session locked by a turn or /compress is usually free again within a minute or two.
LOCKED_RETRY_SECONDS = 300.0


@dataclass(frozen=True, slots=True)
class Thresholds:
    """How big and how idle a session must be, from `config.overnight` and the context window."""

    min_tokens: float
    idle_seconds: float

    @classmethod
    def from_config(cls, config: Config, context_length: int) -> Thresholds:
        overnight = config.overnight
        return cls(overnight.min_ratio * context_length, overnight.idle_minutes * 60.0)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A session due for overnight compaction."""

    chat_key: str
    session_id: int
    active_tokens: int
    # Its chat's window closes here (UTC); None when the window is ignored (`--now`).
    window_end: datetime | None


@dataclass(frozen=True, slots=True)
class Survey:
    """Sessions due now, biggest first, and the earliest moment a waiting one comes due."""

    candidates: tuple[Candidate, ...]
    next_due_at: float | None  # epoch seconds; None when nothing big is waiting


def due_at(session: SessionRecord, thresholds: Thresholds) -> float | None:
    """The moment (epoch seconds) from which `session` may be compacted overnight.

    None when it never will be as it stands: ended, or below `min_ratio` of the window. Otherwise
    it must have been idle `idle_minutes` and be out of summarizer cooldown and breaker pause.
    """
    if session.ended_at is not None or session.active_tokens < thresholds.min_tokens:
        return None
    state = session.compressor
    return max(
        session.last_activity_at + thresholds.idle_seconds,
        state.cooldown_until,
        state.pause_until,
    )


async def survey(
    services: Services,
    now: float,
    *,
    ignore_window: bool = False,
    chat_keys: Collection[str] | None = None,
    exclude: Collection[int] = (),
) -> Survey:
    """Open sessions of chats inside their quiet window (all chats with overnight on when
    `ignore_window`), split into due now and waiting; sessions in `exclude` are left out."""
    if not services.config.compression.enabled:
        return Survey((), None)
    moment = datetime.fromtimestamp(now, UTC)
    candidates: list[Candidate] = []
    waiting: list[float] = []
    for chat_key in await _chat_keys(services, chat_keys):
        settings = await services.settings_for(chat_key)
        if not settings.overnight:
            continue
        # Each chat's model decides its window (/config model), so its share is its own.
        thresholds = Thresholds.from_config(services.config, services.window_for(settings))
        end = None
        if not ignore_window:
            end = window_end(settings.overnight_window, settings.zone, moment)
            if end is None:
                continue
        for session in await services.sessions.list_sessions(chat_key):
            due = due_at(session, thresholds)
            if due is None or session.id in exclude:
                continue
            if due > now:
                waiting.append(due)
            elif await services.locks.lock_holder(session.id) is not None:
                waiting.append(now + LOCKED_RETRY_SECONDS)
            else:
                candidates.append(Candidate(chat_key, session.id, session.active_tokens, end))
    # Biggest first: if the window closes early, the sessions that weigh most are done.
    candidates.sort(key=lambda c: (-c.active_tokens, c.session_id))
    return Survey(tuple(candidates), min(waiting, default=None))


async def _chat_keys(services: Services, wanted: Collection[str] | None) -> list[str]:
    if wanted is None:
        return [chat.key for chat in await services.chats.list_chats()]
    return [key for key in wanted if await services.chats.get_chat(key) is not None]


async def select_sessions(
    services: Services,
    now: float,
    *,
    ignore_window: bool = False,
    chat_keys: Collection[str] | None = None,
) -> list[Candidate]:
    """The sessions the overnight job would compact at `now` (epoch seconds), biggest first."""
    found = await survey(services, now, ignore_window=ignore_window, chat_keys=chat_keys)
    return list(found.candidates)


async def still_due(services: Services, candidate: Candidate, now: float) -> bool:
    """Re-check just before compacting: someone may have written since the selection ran."""
    session = await services.sessions.get_session(candidate.session_id)
    settings = await services.settings_for(candidate.chat_key)
    due = due_at(session, Thresholds.from_config(services.config, services.window_for(settings)))
    return due is not None and due <= now

"""The limits step (SPEC 17): per-member and per-chat rate limits, daily token budgets, and
the notices that say so, once per window.

All of them are read from the store, so several workers on one database enforce one limit. A
thread or forum topic counts toward its parent chat: opening one starts nothing afresh.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from compactbot.bot.events import InboundMessage
from compactbot.bot.ingress.markdown_escape import escape_markdown
from compactbot.bot.llm.metering import DailyBudgets, budget_notice
from compactbot.bot.llm.metering import utc_day as utc_day
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.protocols.shared_limits import RATE_WINDOW_SECONDS as RATE_WINDOW_SECONDS
from compactbot.bot.store.protocols.shared_limits import SharedLimits, limit_key

if TYPE_CHECKING:
    from compactbot.bot.services import Services

log = logging.getLogger(__name__)

AGAIN_IN_A_MINUTE = "You can ask again within a minute."
BUDGET_NOTICE_SECONDS = 86_400.0


class RateLimiter:
    """Sliding one-minute window per key, counted in the store so every worker shares it."""

    def __init__(self, store: SharedLimits, *, clock: Callable[[], float] = time.time) -> None:
        self._store = store
        self._clock = clock

    async def allow(self, key: tuple[str, ...], per_minute: int) -> bool:
        """Records the attempt when it is allowed; a store that cannot answer allows it."""
        if per_minute <= 0:
            return True
        try:
            return await self._store.rate_hit(limit_key(*key), per_minute, self._clock())
        except Exception as err:
            # The message is stored already: refusing it unanswered would drop a question.
            log.warning("rate limit unavailable, allowing: %s", type(err).__name__)
            return True


class NoticeGate:
    """Lets a refusal be said once per key per interval, on all workers together."""

    def __init__(
        self,
        store: SharedLimits,
        scope: str,
        interval_seconds: float,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self._scope = scope
        self._interval = interval_seconds
        self._clock = clock

    async def first(self, key: tuple[str, ...]) -> bool:
        """True when nothing was said for `key` within the interval (and records saying it)."""
        try:
            return await self._store.notice_first(
                self._scope, limit_key(*key), self._interval, self._clock()
            )
        except Exception as err:
            log.warning("notice window unavailable, saying it: %s", type(err).__name__)
            return True


def member_key(message: InboundMessage) -> tuple[str, str]:
    """A member's rate window: in the parent chat for a thread, private chats included."""
    return (message.parent_chat_key or message.chat_key, message.author_id)


def chat_budgets(services: Services) -> Callable[[str], Awaitable[DailyBudgets]]:
    """The daily budgets a chat's model calls are held to: its setting and the operator's."""

    async def budgets(chat_key: str) -> DailyBudgets:
        settings = await services.settings_for(chat_key)
        gateway = services.config.gateway
        return DailyBudgets(
            settings.daily_token_budget,
            gateway.member_daily_token_budget,
            gateway.global_daily_token_budget,
        )

    return budgets


@dataclass(frozen=True, slots=True)
class Refusal:
    text: str
    say: bool  # False when the chat (or member) was already told within the window


class Limits:
    """Whether an addressed message may be answered; every model call is checked again later."""

    def __init__(self, services: Services) -> None:
        self._services = services
        store, clock = services.shared_limits, services.clock
        self._rate = RateLimiter(store, clock=clock)
        self._rate_notices = NoticeGate(store, "rate", RATE_WINDOW_SECONDS, clock=clock)
        # Keyed by UTC day, so this only bounds how long a day's key is kept.
        self._budget_notices = NoticeGate(store, "budget", BUDGET_NOTICE_SECONDS, clock=clock)

    async def refusal(self, message: InboundMessage, settings: ChatSettings) -> Refusal | None:
        """Why this message gets no answer, if a limit applies; each is said once per window."""
        services = self._services
        member = member_key(message)
        if not await self._rate.allow(member, settings.user_rate_limit_per_minute):
            services.metrics.limit_refused("member_rate")
            return Refusal(
                f"{escape_markdown(message.author_name)}, you're sending messages faster than "
                f"I can answer; please slow down a little.\n{AGAIN_IN_A_MINUTE}",
                say=await self._rate_notices.first(member),
            )
        chat = ("chat", member[0])
        if not await self._rate.allow(chat, services.config.gateway.chat_rate_limit_per_minute):
            services.metrics.limit_refused("chat_rate")
            return Refusal(
                "This chat is asking faster than I can answer; please slow down a little.\n"
                + AGAIN_IN_A_MINUTE,
                say=await self._rate_notices.first(chat),
            )
        exhausted = await services.meter.exhausted(message.chat_key, message.author_id)
        if exhausted is None:
            return None
        who = message.author_id if exhausted.limit == "member_budget" else ""
        day = utc_day(services.clock())
        return Refusal(
            budget_notice(exhausted),
            say=await self._budget_notices.first((member[0], exhausted.limit, who, day)),
        )

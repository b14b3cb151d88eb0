"""One raw Telegram update, from JSON to stored: repaired, parsed, handled, or dead-lettered.

Both ingresses (our polling loop and our webhook) acknowledge an update only after `ingest`
returns, and `ingest` returns only once the update is stored or recorded as a dead letter.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Bot, Update

from compactbot.bot.ingress.unicode_repair import repair_json
from compactbot.bot.store.protocols.dead_letters import DeadLetterStore
from compactbot.compression.redact import redact

log = logging.getLogger(__name__)

PLATFORM = "telegram"
# A handler failure may be a database held by another writer: try again before giving up.
HANDLE_RETRY_DELAYS_SECONDS = (0.2, 1.0, 3.0)
# A log line shows this much of an update; the dead-letter row keeps more.
LOG_EXCERPT_CHARS = 200

Handle = Callable[[Update], Awaitable[None]]
Sleep = Callable[[float], Awaitable[None]]


class IngestError(Exception):
    """The update was neither stored nor dead-lettered: it must not be acknowledged."""


def update_id_of(raw: object) -> int | None:
    """The update's id when it has a usable one (Telegram always sends an integer)."""
    if isinstance(raw, dict):
        value = raw.get("update_id")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def excerpt(text: str, limit: int = LOG_EXCERPT_CHARS) -> str:
    """At most `limit` characters of `text`, secrets masked, for one log line."""
    cut = text[:limit] + (f"… ({len(text)} chars)" if len(text) > limit else "")
    return redact(cut)


class UpdateIngest:
    """Turns raw updates into `handle(Update)` calls; what cannot be handled is dead-lettered."""

    def __init__(
        self,
        bot: Bot,
        handle: Handle,
        dead_letters: DeadLetterStore,
        *,
        sleep: Sleep = asyncio.sleep,
        retry_delays_seconds: tuple[float, ...] = HANDLE_RETRY_DELAYS_SECONDS,
    ) -> None:
        self._bot = bot
        self._handle = handle
        self._dead_letters = dead_letters
        self._sleep = sleep
        self._retry_delays = retry_delays_seconds
        # Telegram opens several webhook connections at once; a chat's order is kept here.
        self._one_at_a_time = asyncio.Lock()

    async def ingest(self, raw: Any) -> None:
        """Return once `raw` is stored (or known to need nothing) or dead-lettered."""
        async with self._one_at_a_time:
            await self._ingest(raw)

    async def _ingest(self, raw: Any) -> None:
        repaired = repair_json(raw)
        try:
            if not isinstance(repaired, dict):
                raise TypeError(f"an update is a JSON object, not {type(repaired).__name__}")
            update = Update.de_json(repaired, self._bot)
        except Exception as exc:
            await self._dead_letter(repaired, f"unparseable: {type(exc).__name__}: {exc}")
            return
        for delay in (*self._retry_delays, None):
            try:
                await self._handle(update)
                return
            except Exception as exc:
                if delay is None:
                    log.exception("telegram: update %s failed for good", update.update_id)
                    await self._dead_letter(repaired, f"failed: {type(exc).__name__}: {exc}")
                    return
                log.warning(
                    "telegram: update %s failed (%s); retrying in %.1fs",
                    update.update_id,
                    type(exc).__name__,
                    delay,
                )
                await self._sleep(delay)

    async def _dead_letter(self, raw: Any, error: str) -> None:
        payload = json.dumps(raw, ensure_ascii=False, default=str)
        update_id = update_id_of(raw)
        key = str(update_id) if update_id is not None else _digest(payload)
        try:
            first = await self._dead_letters.record_dead_letter(PLATFORM, key, error, payload)
        except Exception as exc:
            raise IngestError(f"update {key} could not be dead-lettered") from exc
        if first:
            # Once per update: a redelivery of the same bad update is already on record.
            log.warning(
                "telegram: update %s dead-lettered (%s): %s",
                key,
                excerpt(error, LOG_EXCERPT_CHARS),
                excerpt(payload),
            )


def _digest(payload: str) -> str:
    return "sha1:" + hashlib.sha1(payload.encode("utf-8", "replace")).hexdigest()

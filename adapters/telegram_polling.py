"""Our own getUpdates loop: every update of a batch is stored before the next offset is asked.

python-telegram-bot's Updater confirms a batch (the next `offset`) as soon as it has fetched it
and keeps the updates in memory until they are handled, so a hard kill loses them. Here the
offset is the acknowledgement: it moves past an update only after `UpdateIngest.ingest` has
stored or dead-lettered it, so a kill at any point means a redelivery, never a loss (the
gateway drops the redelivered duplicates in the same transaction that stored the original).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from telegram import Bot
from telegram.error import TelegramError
from telegram.warnings import PTBUserWarning

from compactbot.adapters.telegram_ingest import IngestError, UpdateIngest, update_id_of

log = logging.getLogger(__name__)

LONG_POLL_SECONDS = 10
# On top of the long poll, how long the HTTP read may take before the request counts as lost.
READ_MARGIN_SECONDS = 5.0
BATCH_LIMIT = 100  # getUpdates' maximum
# Backoff after a failed getUpdates or an update that could not even be dead-lettered.
ERROR_BACKOFF_SECONDS = (0.5, 1.0, 2.0, 5.0, 10.0, 30.0)
# The last getUpdates on stop only confirms the offset; it must not hold up shutdown.
CONFIRM_TIMEOUT_SECONDS = 2.0
# We call getUpdates through do_api_request to get raw JSON: PTB's get_updates parses the
# whole batch, and one update it cannot parse would then stall polling forever.
warnings.filterwarnings("ignore", "Please use 'Bot.getUpdates'", PTBUserWarning)

Sleep = Callable[[float], Awaitable[None]]


class UpdatePoller:
    """`start()` runs the loop in a task; `stop()` lets the batch in hand finish, then ends."""

    def __init__(
        self,
        bot: Bot,
        ingest: UpdateIngest,
        *,
        allowed_updates: Sequence[str],
        long_poll_seconds: int = LONG_POLL_SECONDS,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._bot = bot
        self._ingest = ingest
        self._allowed = list(allowed_updates)
        self._long_poll = long_poll_seconds
        self._sleep = sleep
        self._offset: int | None = None
        self._stopping = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="telegram-polling")

    async def stop(self) -> None:
        """Stop fetching; an update being stored finishes first. Idempotent."""
        self._stopping.set()
        task, self._task = self._task, None
        if task is not None:
            await task
            await self._confirm()

    async def _run(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                batch = await self._fetch_unless_stopped()
                if batch is None:
                    return
                for raw in batch:
                    await self._ingest.ingest(raw)
                    # Only now, with the update stored, may the next request confirm it.
                    self._advance(raw)
                failures = 0
            except (IngestError, _FetchFailed) as exc:
                # After an IngestError the offset stays put, so the batch comes back.
                await self._back_off(failures, str(exc))
                failures += 1

    async def _fetch_unless_stopped(self) -> list[Any] | None:
        """The next batch, or None when stop() was called while waiting for it."""
        fetch = asyncio.ensure_future(self._fetch())
        stopped = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({fetch, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in (fetch, stopped):
                if not waiter.done():
                    waiter.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await waiter
        if fetch.cancelled():
            return None
        return fetch.result()

    async def _fetch(self) -> list[Any]:
        try:
            result = await self._bot.do_api_request(
                "getUpdates",
                api_kwargs={
                    "offset": self._offset,
                    "timeout": self._long_poll,
                    "limit": BATCH_LIMIT,
                    "allowed_updates": self._allowed,
                },
                read_timeout=self._long_poll + READ_MARGIN_SECONDS,
            )
        except TelegramError as exc:
            raise _FetchFailed(f"getUpdates failed: {type(exc).__name__}") from exc
        if not isinstance(result, list):
            raise _FetchFailed(f"getUpdates returned {type(result).__name__}, not a list")
        return result

    def _advance(self, raw: Any) -> None:
        update_id = update_id_of(raw)
        if update_id is not None and (self._offset is None or update_id >= self._offset):
            self._offset = update_id + 1

    async def _back_off(self, failures: int, why: str) -> None:
        delay = ERROR_BACKOFF_SECONDS[min(failures, len(ERROR_BACKOFF_SECONDS) - 1)]
        log.log(
            logging.WARNING if failures == 0 else logging.DEBUG,
            "telegram: %s; polling again in %.1fs",
            why,
            delay,
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), delay)

    async def _confirm(self) -> None:
        """Tell Telegram what we stored, so a graceful restart gets no redeliveries."""
        if self._offset is None:
            return
        try:
            await asyncio.wait_for(
                self._bot.do_api_request(
                    "getUpdates", api_kwargs={"offset": self._offset, "timeout": 0, "limit": 1}
                ),
                CONFIRM_TIMEOUT_SECONDS,
            )
        except (TelegramError, TimeoutError) as exc:
            log.debug("telegram: final offset confirmation failed: %s", type(exc).__name__)


class _FetchFailed(Exception):
    """getUpdates did not return a batch (network, Telegram, or a malformed answer)."""

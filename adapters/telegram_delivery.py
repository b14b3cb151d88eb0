"""Getting replies and typing indicators to Telegram: HTML chunks, fallbacks and retries."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from telegram import Bot, LinkPreviewOptions, ReplyParameters
from telegram._utils.types import JSONDict
from telegram.constants import ChatAction, ParseMode
from telegram.error import (
    BadRequest,
    ChatMigrated,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.ext import AIORateLimiter
from telegram.warnings import PTBDeprecationWarning

from compactbot.adapters.telegram_html import html_to_plain, render_chunks
from compactbot.adapters.telegram_pacing import SharedPacing
from compactbot.bot.events import DeliveryError, ReplyTarget
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.workers.wire import arrived, leaving, refused

log = logging.getLogger(__name__)

# Flood control: obey Telegram's retry_after this many times per chunk, then give up.
MAX_RETRY_AFTER_WAITS = 3
# A flood wait longer than this would stall the chat's lane for ages (peers saw 13,938 s);
# the reply stays in the transcript and the failure is logged instead.
MAX_RETRY_AFTER_SECONDS = 300.0
# Transient network failures: wait these many seconds between attempts, then give up.
NETWORK_BACKOFF_SECONDS = (0.5, 1.0, 2.0)
# Telegram shows "typing…" for about 5 s per chat action; refresh a little sooner.
TYPING_REFRESH_SECONDS = 4.0
# The first chat action is awaited so it precedes the reply; never hold the turn longer than this.
TYPING_START_TIMEOUT_SECONDS = 2.0

Sleep = Callable[[float], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Chunk:
    """One sendMessage: the HTML text and where it goes."""

    chat_id: int
    thread_id: int | None
    html: str
    reply_to: int | None


class WireMarkingLimiter(AIORateLimiter):
    """PTB's limiter, calling `bot.wire.leaving()` once a request is through the pacing, then
    `arrived()`, or `refused()` when Telegram answered a flood wait (it did nothing else);
    `shared` paces sending requests across every worker first."""

    def __init__(self, *, shared: SharedPacing | None = None, **limits: Any) -> None:
        super().__init__(**limits)
        self._shared = shared

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, bool | JSONDict | list[JSONDict]]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: int | None,
    ) -> bool | JSONDict | list[JSONDict]:
        async def leave_then_call(
            *call_args: Any, **call_kwargs: Any
        ) -> bool | JSONDict | list[JSONDict]:
            await leaving()
            try:
                result = await callback(*call_args, **call_kwargs)
            except RetryAfter:
                await refused()
                raise
            await arrived()
            return result

        if self._shared is not None:
            await self._shared.wait(endpoint, data)
        return await super().process_request(
            leave_then_call, args, kwargs, endpoint, data, rate_limit_args
        )


class TelegramSender:
    """Sends Markdown replies as Telegram HTML and keeps the typing indicator alive."""

    def __init__(
        self, bot: Bot, *, sleep: Sleep = asyncio.sleep, metrics: Metrics | None = None
    ) -> None:
        self._bot = bot
        self._sleep = sleep
        self._metrics = metrics or Metrics()

    async def send(self, target: ReplyTarget, text: str) -> None:
        """Every chunk keeps the topic's thread id; only the first one quotes the question."""
        await self.send_rendered(target, render_chunks(text), quote_first=True)

    async def send_rendered(
        self, target: ReplyTarget, chunks: list[str], *, quote_first: bool
    ) -> None:
        """Send HTML chunks in order; the first quotes the question when `quote_first`."""
        chat_id, thread_id = address(target)
        reply_to = int(target.reply_to_message_id) if target.reply_to_message_id else None
        for index, html in enumerate(chunks):
            quote = reply_to if index == 0 and quote_first else None
            chat_id = await self._deliver(Chunk(chat_id, thread_id, html, quote))
        log.debug("telegram: sent %d chunk(s) to %s", len(chunks), target.chat_key)

    async def _deliver(self, chunk: Chunk) -> int:
        """Send one chunk; returns the chat id it went to (it changes if the group migrated)."""
        as_html = True
        rate_waits = 0
        network_failures = 0
        while True:
            try:
                await self._send_once(chunk, as_html=as_html)
                return chunk.chat_id
            except RetryAfter as exc:
                seconds = retry_after_seconds(exc)
                if rate_waits >= MAX_RETRY_AFTER_WAITS or seconds > MAX_RETRY_AFTER_SECONDS:
                    raise _failed(chunk, f"flood control, retry after {seconds:.0f}s") from exc
                rate_waits += 1
                log.warning("telegram: flood control in %s, waiting %.1fs", chunk.chat_id, seconds)
                self._metrics.retry_after_waited("telegram", seconds)
                await self._sleep(seconds)
            except ChatMigrated as exc:
                log.info("telegram: chat %s moved to %s", chunk.chat_id, exc.new_chat_id)
                chunk = Chunk(int(exc.new_chat_id), chunk.thread_id, chunk.html, chunk.reply_to)
            except BadRequest as exc:
                if not as_html:
                    raise _failed(chunk, exc.message) from exc
                # Usually "can't parse entities"; plain text carries the words either way.
                log.warning(
                    "telegram: HTML refused in %s (%s); resending as plain text",
                    chunk.chat_id,
                    exc.message,
                )
                as_html = False
            except NetworkError as exc:  # includes TimedOut; BadRequest is caught above
                if network_failures >= len(NETWORK_BACKOFF_SECONDS):
                    raise _failed(chunk, type(exc).__name__) from exc
                delay = NETWORK_BACKOFF_SECONDS[network_failures]
                network_failures += 1
                log.warning(
                    "telegram: %s sending to %s, retry in %.1fs",
                    type(exc).__name__,
                    chunk.chat_id,
                    delay,
                )
                await self._sleep(delay)
            except TelegramError as exc:  # Forbidden (bot removed), InvalidToken, ...
                raise _failed(chunk, type(exc).__name__) from exc

    async def _send_once(self, chunk: Chunk, *, as_html: bool) -> None:
        reply = (
            ReplyParameters(message_id=chunk.reply_to, allow_sending_without_reply=True)
            if chunk.reply_to is not None
            else None
        )
        await self._bot.send_message(
            chat_id=chunk.chat_id,
            text=chunk.html if as_html else html_to_plain(chunk.html),
            parse_mode=ParseMode.HTML if as_html else None,
            message_thread_id=chunk.thread_id,
            reply_parameters=reply,
            link_preview_options=LinkPreviewOptions(is_disabled=True),
        )

    @contextlib.asynccontextmanager
    async def typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        """ "typing…" in the chat (and topic) until the block exits; failures never matter."""
        chat_id, thread_id = address(target)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                self._chat_action(chat_id, thread_id), TYPING_START_TIMEOUT_SECONDS
            )
        refresher = asyncio.create_task(self._keep_typing(chat_id, thread_id))
        try:
            yield
        finally:
            refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await refresher

    async def _keep_typing(self, chat_id: int, thread_id: int | None) -> None:
        while True:
            await asyncio.sleep(TYPING_REFRESH_SECONDS)
            await self._chat_action(chat_id, thread_id)

    async def _chat_action(self, chat_id: int, thread_id: int | None) -> None:
        try:
            await self._bot.send_chat_action(
                chat_id=chat_id, action=ChatAction.TYPING, message_thread_id=thread_id
            )
        except TelegramError as exc:
            log.debug("telegram: typing action in %s failed: %s", chat_id, type(exc).__name__)


def retry_after_seconds(exc: RetryAfter) -> float:
    """`retry_after` is an int today and a timedelta with PTB_TIMEDELTA=1 (and in PTB 23)."""
    with warnings.catch_warnings():
        # Reading the int form warns about the coming timedelta; both are handled here.
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    return float(value)


def address(target: ReplyTarget) -> tuple[int, int | None]:
    thread_id = int(target.thread_id) if target.thread_id else None
    return int(target.chat_id), thread_id


def _failed(chunk: Chunk, why: str) -> DeliveryError:
    log.warning("telegram: could not deliver to %s: %s", chunk.chat_id, why)
    return DeliveryError(f"telegram refused the message for chat {chunk.chat_id}: {why}")

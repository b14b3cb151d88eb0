"""Streaming a reply on Telegram: drafts in private chats, one edited message in groups.

Bot API 9.5's `sendMessageDraft` works in private chats only; groups and topics get one message
edited at the pace `bot.streaming.PacedStream` sets. Preview frames are plain text (a half-written
answer is not valid Markdown); the final text is rendered and split like any reply, its first
chunk replacing the preview.
"""

from __future__ import annotations

import asyncio
import itertools
import logging

from telegram import Bot, LinkPreviewOptions, ReplyParameters
from telegram.constants import ParseMode
from telegram.error import BadRequest, NetworkError, RetryAfter, TelegramError

from compactbot.adapters.chunking import utf16_len
from compactbot.adapters.telegram_delivery import (
    MAX_RETRY_AFTER_SECONDS,
    MAX_RETRY_AFTER_WAITS,
    NETWORK_BACKOFF_SECONDS,
    Sleep,
    TelegramSender,
    address,
    retry_after_seconds,
)
from compactbot.adapters.telegram_html import html_to_plain, render_chunks
from compactbot.bot.events import DeliveryError, ReplyTarget
from compactbot.bot.turns.streaming import (
    DEFAULT_INTERVAL_SECONDS,
    Clock,
    FloodWait,
    PacedStream,
    PreviewFailed,
)

log = logging.getLogger(__name__)

# A preview frame must fit one message; the final text is split properly instead.
PREVIEW_MAX_UTF16 = 4000
PREVIEW_CURSOR = " …"
NOT_MODIFIED = "message is not modified"
# Draft ids only need to be non-zero and distinct among a chat's drafts in flight.
_draft_ids = itertools.count(1)


def open_telegram_stream(
    bot: Bot,
    sender: TelegramSender,
    target: ReplyTarget,
    *,
    private: bool,
    clock: Clock,
    sleep: Sleep = asyncio.sleep,
    interval_seconds: float = DEFAULT_INTERVAL_SECONDS,
) -> PacedStream:
    surface = TelegramStreamSurface(bot, sender, target, use_drafts=private, sleep=sleep)
    return PacedStream(surface, interval_seconds=interval_seconds, clock=clock, sleep=sleep)


def preview_text(text: str) -> str:
    """The answer so far, cut to fit one message, with a cursor showing more is coming."""
    body = text.rstrip()
    if utf16_len(body) + len(PREVIEW_CURSOR) > PREVIEW_MAX_UTF16:
        body = body[: PREVIEW_MAX_UTF16 - len(PREVIEW_CURSOR)]
        while utf16_len(body) + len(PREVIEW_CURSOR) > PREVIEW_MAX_UTF16:
            body = body[:-1]
    return body + PREVIEW_CURSOR


class TelegramStreamSurface:
    """One reply's preview (a draft or a message) and its final delivery."""

    def __init__(
        self,
        bot: Bot,
        sender: TelegramSender,
        target: ReplyTarget,
        *,
        use_drafts: bool,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._bot = bot
        self._sender = sender
        self._target = target
        self._chat_id, self._thread_id = address(target)
        self._use_drafts = use_drafts
        self._draft_id = next(_draft_ids)
        self._sleep = sleep
        self.message_id: int | None = None

    async def show(self, text: str) -> None:
        preview = preview_text(text)
        try:
            if self._use_drafts and await self._draft(preview):
                return
            await self._preview_message(preview)
        except RetryAfter as exc:
            raise FloodWait(retry_after_seconds(exc)) from exc
        except BadRequest as exc:
            if NOT_MODIFIED in exc.message.lower():
                return
            raise PreviewFailed(exc.message) from exc
        except TelegramError as exc:
            raise PreviewFailed(type(exc).__name__) from exc

    async def _draft(self, preview: str) -> bool:
        """True when the draft was shown; a refused draft switches this reply to edits."""
        try:
            await self._bot.send_message_draft(
                chat_id=self._chat_id,
                draft_id=self._draft_id,
                text=preview,
                message_thread_id=self._thread_id,
            )
        except RetryAfter:
            raise
        except TelegramError as exc:
            log.info(
                "telegram: draft refused in %s (%s); editing a message instead",
                self._chat_id,
                type(exc).__name__,
            )
            self._use_drafts = False
            return False
        return True

    async def _preview_message(self, preview: str) -> None:
        if self.message_id is None:
            reply_to = self._target.reply_to_message_id
            sent = await self._bot.send_message(
                chat_id=self._chat_id,
                text=preview,
                message_thread_id=self._thread_id,
                reply_parameters=(
                    ReplyParameters(message_id=int(reply_to), allow_sending_without_reply=True)
                    if reply_to
                    else None
                ),
                link_preview_options=LinkPreviewOptions(is_disabled=True),
            )
            self.message_id = sent.message_id
            return
        await self._bot.edit_message_text(
            text=preview,
            chat_id=self._chat_id,
            message_id=self.message_id,
            link_preview_options=LinkPreviewOptions(is_disabled=True),
        )

    async def finish(self, text: str) -> None:
        chunks = render_chunks(text)
        if self.message_id is None:
            # Drafts (or no preview at all): the final text is an ordinary reply.
            await self._sender.send_rendered(self._target, chunks, quote_first=True)
            return
        if not await self._edit_final(chunks[0]):
            # The preview is gone (deleted by someone): the whole answer goes out anew.
            await self._sender.send_rendered(self._target, chunks, quote_first=True)
            return
        await self._sender.send_rendered(self._target, chunks[1:], quote_first=False)

    async def _edit_final(self, html: str) -> bool:
        """Replace the preview with the first rendered chunk; False if it cannot be edited."""
        assert self.message_id is not None
        as_html = True
        waits = 0
        failures = 0
        while True:
            try:
                await self._bot.edit_message_text(
                    text=html if as_html else html_to_plain(html),
                    chat_id=self._chat_id,
                    message_id=self.message_id,
                    parse_mode=ParseMode.HTML if as_html else None,
                    link_preview_options=LinkPreviewOptions(is_disabled=True),
                )
                return True
            except RetryAfter as exc:
                seconds = retry_after_seconds(exc)
                if waits >= MAX_RETRY_AFTER_WAITS or seconds > MAX_RETRY_AFTER_SECONDS:
                    raise DeliveryError(f"flood control, retry after {seconds:.0f}s") from exc
                waits += 1
                log.warning("telegram: flood control in %s, waiting %.1fs", self._chat_id, seconds)
                await self._sleep(seconds)
            except BadRequest as exc:
                if NOT_MODIFIED in exc.message.lower():
                    return True
                if not as_html:
                    log.warning("telegram: final edit refused in %s: %s", self._chat_id, exc)
                    return False
                as_html = False
            except NetworkError as exc:
                if failures >= len(NETWORK_BACKOFF_SECONDS):
                    raise DeliveryError(f"telegram unreachable: {type(exc).__name__}") from exc
                await self._sleep(NETWORK_BACKOFF_SECONDS[failures])
                failures += 1
            except TelegramError as exc:
                raise DeliveryError(f"telegram refused the edit: {type(exc).__name__}") from exc

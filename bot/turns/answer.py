"""Answering one question, the same whether its turn runs in a chat's lane or as a durable job.

`Answerer` runs the steps (limits, files, typing, the model's turn, notices, the reply, failure
notices) and reports what the chat is to be told through a `TurnOutput`: the in-process gateway
sends at once (streaming as the model writes), a worker collects it for the job's fenced commit.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from compactbot.bot.events import Adapter, InboundMessage, ReplyTarget
from compactbot.bot.i18n import localize_trailer
from compactbot.bot.ingress.admins import is_admin
from compactbot.bot.ingress.inbound_text import drop_images, enrich_media
from compactbot.bot.ingress.limits import Limits
from compactbot.bot.llm.stream import STREAM_BROKEN_NOTICE, TextSink
from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.base import NewMessage, TurnFence, TurnLost
from compactbot.bot.turns.chat_languages import ChatLanguages
from compactbot.bot.turns.failure_notices import FailureNotices
from compactbot.bot.turns.turn_requests import turn_request
from compactbot.bot.turns.typing_indicator import TypingIndicators

log = logging.getLogger(__name__)

TURN_FAILED = "Something went wrong while answering. Your message is saved; try again shortly."
# An empty reply still tells the asker the turn ended.
EMPTY_REPLY = "…"

Say = Callable[[str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Question:
    """A stored, addressed message to answer, with where it is stored and the chat's settings."""

    message: InboundMessage
    adapter: Adapter
    session_id: int
    anchor_id: int
    settings: ChatSettings

    @property
    def target(self) -> ReplyTarget:
        return ReplyTarget.for_message(self.message)


class TurnOutput(Protocol):
    """Where a turn's words go: sent now (in-process lanes) or kept for a fenced commit."""

    @property
    def on_text(self) -> TextSink | None:
        """Receives the reply as the model writes it, where it is streamed."""
        ...

    async def notice(self, text: str) -> None:
        """Our own words, already in the chat's language."""
        ...

    async def reply(self, text: str, row: NewMessage) -> None:
        """The model's reply: `row` is stored, then `text` delivered."""
        ...

    async def abandon(self) -> None:
        """No reply is coming: drop what was streamed of it."""
        ...


class Answerer:
    """The one answer path of both gateways; it holds what outlives a single turn."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.languages = ChatLanguages(services)
        # Kept in the store: every worker on the database enforces the same limits.
        self.limits = Limits(services)
        self.typing = TypingIndicators()
        self._failures = FailureNotices(services.shared_limits, clock=services.clock)

    async def is_admin(self, message: InboundMessage, adapter: Adapter) -> bool:
        return await is_admin(message, adapter, self.services.config.gateway.operators)

    async def refused(self, question: Question, say: Say) -> bool:
        """True when a limit refuses the question; `say` gets its refusal, once a window."""
        refusal = await self.limits.refusal(question.message, question.settings)
        if refusal is None:
            return False
        if refusal.say:
            await say(await self.languages.localized(question.message.chat_key, refusal.text))
        return True

    async def run(self, question: Question, output: TurnOutput, fence: TurnFence) -> None:
        """A durable job's whole turn: the ingress only stored the question and queued it."""
        self.languages.remember(question.message)
        if await self.refused(question, output.notice):
            return
        message = question.message
        if message.attachments:
            await enrich_media(self.services, message, question.anchor_id, question.adapter)
        typing_done = self.typing.start(question.adapter, question.target)
        await self.answer(question, output, typing_done, fence=fence)

    async def answer(
        self,
        question: Question,
        output: TurnOutput,
        typing_done: asyncio.Event,
        *,
        fence: TurnFence | None = None,
    ) -> None:
        """Run the model's turn and report it; `typing_done` is set once the model is done."""
        services, message = self.services, question.message
        chat_key = message.chat_key
        timer = services.metrics.turn_started(message.platform)
        try:
            request = turn_request(
                services,
                message,
                question.session_id,
                question.anchor_id,
                question.settings,
                can_remember=not message.is_group or await self.is_admin(message, question.adapter),
                on_text=output.on_text,
                fence=fence,
            )
            result = await services.agent.run_turn(request)
        except TurnLost:
            await output.abandon()
            timer.finished(answered=False)
            raise  # another worker answers it; nothing of ours may be said or written
        except BaseException as exc:
            await output.abandon()
            if not isinstance(exc, Exception):
                raise
            # A turn that breaks in an unexpected way still leaves the asker a notice.
            log.exception("turn failed (chat=%s)", chat_key)
            await self._failure(output, chat_key, TURN_FAILED)
            timer.finished(answered=False)
            return
        finally:
            typing_done.set()
        if message.attachments:
            await drop_images(services, message)
        for notice in result.notices:
            await output.notice(await self.languages.localized(chat_key, notice))
        if result.reply is not None:
            language = self.languages.language(chat_key, question.settings.language)
            reply = localize_trailer(result.reply, STREAM_BROKEN_NOTICE, language) or EMPTY_REPLY
            await output.reply(reply, reply_row(services, reply))
            await self._failures.recovered(chat_key)
        else:
            await output.abandon()
            if result.error:
                await self._failure(output, chat_key, result.error)
        timer.finished(answered=result.reply is not None)

    async def _failure(self, output: TurnOutput, chat_key: str, full_text: str) -> None:
        notice = await self._failures.notice_for(chat_key, full_text)
        await output.notice(await self.languages.localized(chat_key, notice))

    async def close(self) -> None:
        await self.typing.close()


def reply_row(services: Services, text: str) -> NewMessage:
    """The transcript row of a reply, as members saw it."""
    row = {"role": "assistant", "content": text}
    return NewMessage.from_openai(row, services.counter.count_message(row))

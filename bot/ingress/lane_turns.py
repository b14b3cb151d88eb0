"""The in-process `TurnQueue`: a chat's answers and replies wait in its lane (`compactbot run`).

Answers stream as the model writes them, and a chat whose questions pile up faster than they
can be answered gets one answer to the newest (the answer backlog's coalescing).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial

from compactbot.bot.events import Adapter, DeliveryError, ReplyTarget
from compactbot.bot.ingress.steps import Delivery
from compactbot.bot.llm.stream import TextSink
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.store.base import NewMessage
from compactbot.bot.store.write_batcher import BatchedAppends
from compactbot.bot.turns.answer import Answerer, Question
from compactbot.bot.turns.answer_backlog import AnswerBacklog
from compactbot.bot.turns.exclusivity import TurnLanes
from compactbot.bot.turns.streaming import ReplyStream, finish_stream, open_stream

log = logging.getLogger(__name__)

COALESCED = "⏩ I fell behind, so I'm answering the last {n} questions together."


async def send_now(adapter: Adapter, target: ReplyTarget, text: str, metrics: Metrics) -> None:
    """Send `text` as it is; a platform that refuses it is logged and counted, not raised."""
    try:
        await adapter.send(target, text)
    except DeliveryError:
        # The text is already in the transcript (for replies); log so it is not lost silently.
        log.error("reply could not be delivered (chat=%s)", target.chat_key)
        metrics.send_failed(target.platform)


class LaneTurns:
    """Answers and command replies queued in the chat's lane, sent by this process."""

    # The ingress reads a message's files in the lane, so the answer queued after them sees them.
    turn_reads_files = False

    def __init__(self, lanes: TurnLanes, answers: Answerer, appends: BatchedAppends) -> None:
        self._lanes = lanes
        self._answers = answers
        self._appends = appends
        self._metrics = answers.services.metrics
        self._backlog = AnswerBacklog()

    def stored_with(self, delivery: Delivery) -> Delivery:
        return delivery

    async def answer(self, question: Question, lane: str) -> None:
        adapter, target = question.adapter, question.target

        async def refuse(text: str) -> None:
            self._lanes.submit(lane, lambda: send_now(adapter, target, text, self._metrics))

        # Refused before it is queued: a refused question takes no place in the lane or backlog.
        if await self._answers.refused(question, refuse):
            return
        typing_done = self._answers.typing.start(adapter, target)
        ticket = self._backlog.enqueue(lane)
        self._lanes.submit(lane, lambda: self._answer(question, typing_done, lane, ticket))

    async def queue_replies(
        self, lane: str, adapter: Adapter, target: ReplyTarget, texts: Sequence[str]
    ) -> None:
        for text in texts:
            self._lanes.submit(lane, partial(self.report, lane, adapter, target, text))

    async def report(self, lane: str, adapter: Adapter, target: ReplyTarget, text: str) -> None:
        # Sent at once: a compaction runs outside the lane, which may be closed when it ends.
        said = await self._answers.languages.localized(target.chat_key, text)
        await send_now(adapter, target, said, self._metrics)

    async def _answer(
        self, question: Question, typing_done: asyncio.Event, lane: str, ticket: int
    ) -> None:
        covered = self._backlog.begin(lane, ticket)
        if covered is None:
            typing_done.set()  # a newer question's answer covers this one
            return
        adapter, target = question.adapter, question.target
        if covered:
            await self.report(lane, adapter, target, COALESCED.format(n=covered + 1))
        stream = open_stream(adapter, target, is_group=question.message.is_group)
        output = SentNow(adapter, target, stream, self._appends, question.session_id, self._metrics)
        await self._answers.answer(question, output, typing_done)


class SentNow:
    """The in-process `TurnOutput`: everything goes to the chat as soon as it is known."""

    def __init__(
        self,
        adapter: Adapter,
        target: ReplyTarget,
        stream: ReplyStream | None,
        appends: BatchedAppends,
        session_id: int,
        metrics: Metrics,
    ) -> None:
        self._adapter = adapter
        self._target = target
        self._stream = stream
        self._appends = appends
        self._session_id = session_id
        self._metrics = metrics

    @property
    def on_text(self) -> TextSink | None:
        return self._stream.update if self._stream is not None else None

    async def notice(self, text: str) -> None:
        await send_now(self._adapter, self._target, text, self._metrics)

    async def reply(self, text: str, row: NewMessage) -> None:
        # Stored as members saw it, before it is sent.
        await self._appends.append_messages(self._session_id, [row])
        if self._stream is None:
            await send_now(self._adapter, self._target, text, self._metrics)
        elif not await finish_stream(self._stream, text, self._target.chat_key):
            self._metrics.send_failed(self._target.platform)

    async def abandon(self) -> None:
        if self._stream is not None:
            await self._stream.abandon()

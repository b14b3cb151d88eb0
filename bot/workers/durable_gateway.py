"""The gateway of `compactbot worker` and `compactbot ingress`: turns go through the database.

An addressed message's turn is enqueued in the transaction that stores it; commands still run
where they were ingested, in arrival order, and their replies queue behind the chat's turns. Any
worker then answers a claimed turn with `InboxTurns.answer_job` (the one answer path, `Answerer`),
whose outcome (reply rows and what to say) the consumer commits in the job's last, fenced
transaction. Streaming and the answer backlog's coalescing are off here: a reply exists only
once that transaction commits.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from compactbot.bot.events import Adapter, Attachment, InboundMessage, ReplyTarget
from compactbot.bot.ingress.gateway import Gateway
from compactbot.bot.ingress.steps import Delivery
from compactbot.bot.llm.stream import TextSink
from compactbot.bot.services import Services
from compactbot.bot.store.base import InboxEntry, NewMessage, SessionRecord, TurnFence
from compactbot.bot.store.postgres.queue.inbox import PostgresInbox, Say
from compactbot.bot.turns.answer import Answerer, Question
from compactbot.bot.turns.lanes import lane_key

log = logging.getLogger(__name__)


@dataclass(slots=True)
class TurnOutcome:
    """What a turn produced, committed together with the job's end."""

    session_id: int
    replies: list[NewMessage] = field(default_factory=list)
    says: list[Say] = field(default_factory=list)


def message_json(message: InboundMessage) -> dict[str, Any]:
    return asdict(message)


def message_from_json(raw: Mapping[str, Any]) -> InboundMessage:
    fields = dict(raw)
    fields["attachments"] = tuple(Attachment(**a) for a in fields.get("attachments") or ())
    return InboundMessage(**fields)


def say_to(target: ReplyTarget, text: str) -> Say:
    return Say(target.platform, asdict(target), text)


class DurableGateway(Gateway):
    """`Gateway` whose turns are durable jobs in the PostgreSQL inbox (SPEC 15)."""

    def __init__(self, services: Services, inbox: PostgresInbox) -> None:
        answers = Answerer(services)
        self.inbox = inbox
        self.jobs = InboxTurns(services, inbox, answers)
        super().__init__(services, notice=self.jobs.notice, answers=answers, turns=self.jobs)


class InboxTurns:
    """The durable `TurnQueue`: turns and replies wait in the inbox, behind the chat's earlier
    ones; `answer_job` runs a claimed turn."""

    # A job may run on any worker, after the ingress that stored its message has moved on.
    turn_reads_files = True

    def __init__(self, services: Services, inbox: PostgresInbox, answers: Answerer) -> None:
        self._services = services
        self._inbox = inbox
        self._answers = answers

    def stored_with(self, delivery: Delivery) -> Delivery:
        if not delivery.addressed:
            return delivery
        item = delivery.item
        entry = InboxEntry(
            lane_key(item.chat_key, item.scope_user), {"message": message_json(delivery.message)}
        )
        return replace(delivery, item=replace(item, enqueue=entry))

    async def answer(self, question: Question, lane: str) -> None:
        """Nothing left to do: the turn was committed with its message, for a worker to claim."""

    async def queue_replies(
        self, lane: str, adapter: Adapter, target: ReplyTarget, texts: Sequence[str]
    ) -> None:
        localized = self._answers.languages.localized
        says = [say_to(target, await localized(target.chat_key, text)) for text in texts]
        await self._inbox.enqueue_sends(lane, target.chat_key, says)

    async def report(self, lane: str, adapter: Adapter, target: ReplyTarget, text: str) -> None:
        await self.queue_replies(lane, adapter, target, [text])

    async def notice(
        self, session: SessionRecord, adapter: Adapter, target: ReplyTarget, text: str
    ) -> None:
        """A compaction's notice goes through the outbox, behind the chat's turns, like every
        other reply here: a worker dying as it sends it loses nothing."""
        lane = lane_key(session.chat_key, session.scope_user)
        await self._inbox.enqueue_sends(lane, session.chat_key, [say_to(target, text)])

    async def answer_job(
        self, payload: Mapping[str, Any], adapter: Adapter, fence: TurnFence
    ) -> TurnOutcome:
        """Run one claimed turn; nothing it says is sent here, it is returned for the commit."""
        message = message_from_json(payload["message"])
        settings = await self._services.settings_for(message.chat_key, message.parent_chat_key)
        session_id, anchor_id = int(payload["session_id"]), int(payload["message_id"])
        question = Question(message, adapter, session_id, anchor_id, settings)
        output = Collected(question.target, TurnOutcome(session_id))
        await self._answers.run(question, output, fence)
        return output.outcome


class Collected:
    """The durable `TurnOutput`: what the turn says and stores, kept for the fenced commit."""

    on_text: TextSink | None = None  # a reply exists only once the job's transaction commits

    def __init__(self, target: ReplyTarget, outcome: TurnOutcome) -> None:
        self._target = target
        self.outcome = outcome

    async def notice(self, text: str) -> None:
        self.outcome.says.append(say_to(self._target, text))

    async def reply(self, text: str, row: NewMessage) -> None:
        self.outcome.replies.append(row)
        self.outcome.says.append(say_to(self._target, text))

    async def abandon(self) -> None:
        """Nothing was streamed."""

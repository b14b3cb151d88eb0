"""The gateway of `compactbot worker` and `compactbot ingress`: turns go through the database.

An addressed message's turn is enqueued in the transaction that stores it; commands still run
where they were ingested, in arrival order, and their replies queue behind the chat's turns. Any
worker then answers a claimed turn with `answer_job`, whose outcome (reply rows and what to say)
the consumer commits in the job's last, fenced transaction. Streaming and the answer backlog's
coalescing are off here: a reply exists only once that transaction commits.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from compactbot.bot.commands.router import CommandContext, run_command
from compactbot.bot.events import Adapter, Attachment, InboundMessage, ReplyTarget
from compactbot.bot.i18n import language_for, localize, localize_trailer
from compactbot.bot.ingress.gateway import KNOWN_CHATS_MAX, TURN_FAILED, Gateway, _lane_key
from compactbot.bot.ingress.inbound_text import drop_images, enrich_media
from compactbot.bot.ingress.steps import Delivery
from compactbot.bot.llm.stream import STREAM_BROKEN_NOTICE
from compactbot.bot.services import Services
from compactbot.bot.store.base import (
    InboxEntry,
    IngestResult,
    NewMessage,
    SessionRecord,
    TurnFence,
    TurnLost,
)
from compactbot.bot.store.postgres.inbox import PostgresInbox, Say
from compactbot.bot.turns.turn_requests import turn_request

log = logging.getLogger(__name__)

COMMAND_FAILED = "⚠️ That command failed. Nothing was changed."


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
        super().__init__(services, notice=self._queue_notice)
        self.inbox = inbox

    async def _queue_notice(
        self, session: SessionRecord, adapter: Adapter, target: ReplyTarget, text: str
    ) -> None:
        """A compaction's notice goes through the outbox, behind the chat's turns, like every
        other reply here: a worker dying as it sends it loses nothing."""
        await self.inbox.enqueue_sends(_lane_key(session), session.chat_key, [say_to(target, text)])

    async def _deliver(self, message: InboundMessage, adapter: Adapter) -> Delivery:
        delivery = await super()._deliver(message, adapter)
        if not delivery.addressed:
            return delivery
        item = delivery.item
        lane = f"{item.chat_key}|{item.scope_user or ''}"  # as _lane_key names the session's
        entry = InboxEntry(lane, {"message": message_json(message)})
        return replace(delivery, item=replace(item, enqueue=entry))

    async def _route(self, delivery: Delivery, result: IngestResult) -> None:
        session = result.session
        assert session is not None  # set for every item that is not a duplicate
        message, adapter = delivery.message, delivery.adapter
        self.services.metrics.message_received(message.platform, message.chat_key)
        if delivery.command is not None:
            await self._run_command(delivery, session, _lane_key(session))
            return
        if result.message_id is None:
            return
        target = ReplyTarget.for_message(message)
        if message.attachments and not delivery.addressed:
            # An addressed message's files are read by its turn, before it answers.
            stored_id, services = result.message_id, self.services
            self.lanes.submit(
                _lane_key(session), lambda: enrich_media(services, message, stored_id, adapter)
            )
        self.compactions.after_store(session, delivery.settings, adapter, target)

    async def _run_command(self, delivery: Delivery, session: SessionRecord, lane: str) -> None:
        message, adapter = delivery.message, delivery.adapter
        target = ReplyTarget.for_message(message)

        async def reply(text: str) -> None:
            said = await self._localized(target, text)
            await self.inbox.enqueue_sends(lane, message.chat_key, [say_to(target, said)])

        assert delivery.command is not None
        ctx = CommandContext(message, adapter, self, session.id, delivery.settings, reply)
        try:
            replies = await run_command(delivery.command, ctx)
        except Exception:
            log.exception("command failed (chat=%s)", message.chat_key)
            replies = [COMMAND_FAILED]
        says = [say_to(target, await self._localized(target, text)) for text in replies]
        await self.inbox.enqueue_sends(lane, message.chat_key, says)

    async def answer_job(
        self, payload: Mapping[str, Any], adapter: Adapter, fence: TurnFence
    ) -> TurnOutcome:
        """Run one claimed turn; nothing it says is sent here, it is returned for the commit."""
        services = self.services
        message = message_from_json(payload["message"])
        anchor_id, session_id = int(payload["message_id"]), int(payload["session_id"])
        target = ReplyTarget.for_message(message)
        outcome = TurnOutcome(session_id)
        if message.language_code and len(self._language_codes) < KNOWN_CHATS_MAX:
            self._language_codes[message.chat_key] = message.language_code
        settings = await services.settings_for(message.chat_key, message.parent_chat_key)
        refusal = await self.limits.refusal(message, settings)
        if refusal is not None:
            if refusal.say:
                outcome.says.append(say_to(target, await self._localized(target, refusal.text)))
            return outcome
        if message.attachments:
            await enrich_media(services, message, anchor_id, adapter)
        timer = services.metrics.turn_started(message.platform)
        typing_done = self._start_typing(adapter, target)
        try:
            request = turn_request(
                services,
                message,
                session_id,
                anchor_id,
                settings,
                can_remember=not message.is_group or await self.is_admin(message, adapter),
                fence=fence,
            )
            result = await services.agent.run_turn(request)
        except TurnLost:
            timer.finished(answered=False)
            raise  # another worker answers it; nothing of ours may be said or written
        except Exception:
            # A turn that breaks in an unexpected way still leaves the asker a notice.
            log.exception("turn failed (chat=%s)", message.chat_key)
            notice = await self._failure_notices.notice_for(message.chat_key, TURN_FAILED)
            outcome.says.append(say_to(target, await self._localized(target, notice)))
            timer.finished(answered=False)
            return outcome
        finally:
            typing_done.set()
        if message.attachments:
            await drop_images(services, message)
        for notice in result.notices:
            outcome.says.append(say_to(target, await self._localized(target, notice)))
        if result.reply is not None:
            code = self._language_codes.get(message.chat_key)
            language = language_for(settings.language, code)
            reply = localize_trailer(result.reply, STREAM_BROKEN_NOTICE, language) or "…"
            row = {"role": "assistant", "content": reply}
            outcome.replies.append(NewMessage.from_openai(row, services.counter.count_message(row)))
            outcome.says.append(say_to(target, reply))
            await self._failure_notices.recovered(message.chat_key)
        elif result.error:
            notice = await self._failure_notices.notice_for(message.chat_key, result.error)
            outcome.says.append(say_to(target, await self._localized(target, notice)))
        timer.finished(answered=result.reply is not None)
        return outcome

    async def _localized(self, target: ReplyTarget, text: str) -> str:
        """Our own words in the chat's language (model output is never localized)."""
        settings = await self.services.settings_for(target.chat_key)
        code = self._language_codes.get(target.chat_key)
        return localize(text, language_for(settings.language, code))

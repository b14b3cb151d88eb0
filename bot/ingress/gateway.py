"""The inbound pipeline every adapter feeds: one ordered ingress, then turns in per-chat lanes.

`ingest` returns once its updates are committed (dedup, chat and message in one transaction),
so a platform may acknowledge them then; commands take effect there, in arrival order, and
everything that talks back (replies, answers) is queued in the chat's lane.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from compactbot.bot.commands.router import CommandContext, run_command
from compactbot.bot.compaction.background import BackgroundCompactions, Notice
from compactbot.bot.compaction.report import ReportSink
from compactbot.bot.events import Adapter, DeliveryError, InboundMessage, ReplyTarget
from compactbot.bot.i18n import language_for, localize, localize_trailer
from compactbot.bot.ingress import steps as ingress
from compactbot.bot.ingress.inbound_text import drop_images, enrich_media, neutralised, reply_quote
from compactbot.bot.ingress.limits import Limits
from compactbot.bot.ingress.steps import Delivery
from compactbot.bot.llm.stream import STREAM_BROKEN_NOTICE
from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.base import IngestResult, NewMessage, SessionRecord
from compactbot.bot.store.write_batcher import BatchedAppends, BatchedIngest
from compactbot.bot.turns.answer_backlog import AnswerBacklog
from compactbot.bot.turns.exclusivity import TurnLanes
from compactbot.bot.turns.failure_notices import FailureNotices
from compactbot.bot.turns.lanes import LaneScheduler
from compactbot.bot.turns.streaming import finish_stream, open_stream
from compactbot.bot.turns.turn_requests import turn_request

log = logging.getLogger(__name__)

COALESCED = "⏩ I fell behind, so I'm answering the last {n} questions together."
TURN_FAILED = "Something went wrong while answering. Your message is saved; try again shortly."
ALLOWLIST_NOTICE_PLATFORM = "allowlist-notice"
KNOWN_CHATS_MAX = 100_000

Inbound = tuple[InboundMessage, Adapter]


class Gateway:
    """Platform-neutral handling of inbound messages; adapters call `ingest` (or `handle`)."""

    def __init__(
        self, services: Services, *, lanes: TurnLanes | None = None, notice: Notice | None = None
    ) -> None:
        self.services = services
        config = services.config
        self.lanes: TurnLanes = lanes or LaneScheduler(config.gateway.max_concurrent_chats)
        self.compactions = BackgroundCompactions(services, notice)
        # Kept in the store: every worker on the database enforces the same limits.
        self.limits = Limits(services)
        self._failure_notices = FailureNotices(services.store, clock=services.clock)
        self._backlog = AnswerBacklog()
        self._known_chats: set[tuple[str, str | None, str | None, bool]] = set()
        self._typing: set[asyncio.Task[None]] = set()
        self._order = ingress.ChatOrder()
        # Group commit: messages and replies of many chats arriving together share a transaction.
        self._ingests = BatchedIngest(services.store)
        self._appends = BatchedAppends(services.store)
        # The platform language code last seen per chat, for notices when language is "auto".
        self._language_codes: dict[str, str] = {}
        # Called with a chat key after /config changes it (the overnight scheduler listens).
        self.settings_listeners: list[Callable[[str], Awaitable[None]]] = []

    async def handle(self, message: InboundMessage, adapter: Adapter) -> None:
        """One update; returns after it is stored (and its command has taken effect)."""
        await self.ingest([(message, adapter)])

    async def ingest(self, batch: Sequence[Inbound]) -> None:
        """Store a batch of updates in order; returns only after every one of them committed.

        Messages between commands share one transaction; a command is committed and run before
        anything after it is stored, so "/new" then a message puts the message in the new session.
        """
        allowed_chats = self.services.config.gateway.allowed_chats
        async with self._order.holding(message.chat_key for message, _ in batch):
            run: list[Delivery] = []
            for message, adapter in batch:
                message = neutralised(message)
                if not ingress.allowed(message.chat_key, allowed_chats):
                    await self._refuse_chat(message, adapter)
                    continue
                run.append(await self._deliver(message, adapter))
                if run[-1].command is not None:
                    await self._store_and_route(run)
                    run = []
            if run:
                await self._store_and_route(run)

    async def join(self) -> None:
        """Wait until every lane and background compaction is idle (tests, console, shutdown)."""
        # A compaction's report is queued in a lane, and a turn may start a compaction.
        await self.lanes.join()
        while self.compactions.busy:
            await self.compactions.join()
            await self.lanes.join()

    async def settings_changed(self, chat_key: str) -> None:
        for listener in self.settings_listeners:
            try:
                await listener(chat_key)
            except Exception:
                log.exception("settings listener failed (chat=%s)", chat_key)

    def start_compaction(
        self,
        session_id: int,
        chat_key: str,
        settings: ChatSettings,
        *,
        trigger: str,
        force: bool,
        focus: str | None,
        on_done: ReportSink,
    ) -> bool:
        return self.compactions.start(
            session_id,
            chat_key,
            settings,
            trigger=trigger,
            force=force,
            focus=focus,
            on_done=on_done,
        )

    async def close(self) -> None:
        await self.lanes.close()
        await self.compactions.close()
        await self._ingests.close()
        await self._appends.close()
        for task in list(self._typing):
            task.cancel()
        await asyncio.gather(*self._typing, return_exceptions=True)

    # --- the ingress ------------------------------------------------------------------------

    async def _deliver(self, message: InboundMessage, adapter: Adapter) -> Delivery:
        settings = await self.services.settings_for(message.chat_key, message.parent_chat_key)
        chat = (message.chat_key, message.chat_title, message.parent_chat_key, message.is_group)
        if message.language_code and len(self._language_codes) < KNOWN_CHATS_MAX:
            self._language_codes[message.chat_key] = message.language_code
        # A reply brings the message it answers, found in the archive if compacted long ago.
        quote = await reply_quote(self.services.store, message) if message.reply_to else None
        admin = await ingress.author_admin(message, lambda: self.is_admin(message, adapter))
        return ingress.deliver(
            message,
            adapter,
            settings,
            self.services.counter,
            known_chat=chat in self._known_chats,
            quote=quote,
            author_admin=admin,
        )

    async def _store_and_route(self, run: list[Delivery]) -> None:
        results = await self._ingests.ingest([d.item for d in run])
        for delivery, result in zip(run, results, strict=True):
            if result.duplicate:
                log.info("duplicate update ignored (chat=%s)", delivery.message.chat_key)
                continue
            self._remember_chat(delivery.message)
            await self._route(delivery, result)

    def _remember_chat(self, message: InboundMessage) -> None:
        # A write per message only to repeat what the row already says is wasted.
        if len(self._known_chats) >= KNOWN_CHATS_MAX:
            self._known_chats.clear()
        self._known_chats.add(
            (message.chat_key, message.chat_title, message.parent_chat_key, message.is_group)
        )

    async def _route(self, delivery: Delivery, result: IngestResult) -> None:
        session = result.session
        assert session is not None  # set for every item that is not a duplicate
        message, adapter = delivery.message, delivery.adapter
        lane = _lane_key(session)
        target = ReplyTarget.for_message(message)
        self.services.metrics.message_received(message.platform, message.chat_key)
        if delivery.command is not None:
            await self._run_command(delivery, session, lane)
            return
        if result.message_id is None:
            return
        if message.attachments:
            # Files are read in the chat's lane, so the answer after them sees what they hold.
            stored_id, services = result.message_id, self.services
            self.lanes.submit(lane, lambda: enrich_media(services, message, stored_id, adapter))
        self.compactions.after_store(session, delivery.settings, adapter, target)
        if not delivery.addressed:
            return
        refusal = await self.limits.refusal(message, delivery.settings)
        if refusal is not None:
            if refusal.say:
                self.lanes.submit(lane, lambda: self._send(adapter, target, refusal.text))
            return
        typing_done = self._start_typing(adapter, target)
        anchor = result.message_id
        ticket = self._backlog.enqueue(lane)
        self.lanes.submit(
            lane,
            lambda: self._answer(delivery, session.id, anchor, target, typing_done, (lane, ticket)),
        )

    async def _run_command(self, delivery: Delivery, session: SessionRecord, lane: str) -> None:
        message, adapter = delivery.message, delivery.adapter
        target = ReplyTarget.for_message(message)

        async def reply(text: str) -> None:
            await self._send(adapter, target, text)

        assert delivery.command is not None
        ctx = CommandContext(message, adapter, self, session.id, delivery.settings, reply)
        try:
            replies = await run_command(delivery.command, ctx)
        except Exception:
            log.exception("command failed (chat=%s)", message.chat_key)
            replies = ["⚠️ That command failed. Nothing was changed."]
        for text in replies:
            self.lanes.submit(lane, lambda text=text: reply(text))  # type: ignore[misc]

    async def _refuse_chat(self, message: InboundMessage, adapter: Adapter) -> None:
        # Only an addressed message uses up the one notice: group chatter seen first must not
        # leave the chat without ever being told.
        if not message.addressed:
            return
        first = await self.services.store.mark_update_processed(
            ALLOWLIST_NOTICE_PLATFORM, message.chat_key
        )
        if first:
            await self._send(
                adapter,
                ReplyTarget.for_message(message),
                "compactbot is not enabled in this chat. Ask the bot's operator to allow it.",
            )

    # --- the lane ---------------------------------------------------------------------------

    def _start_typing(self, adapter: Adapter, target: ReplyTarget) -> asyncio.Event:
        """Show "typing…" from the moment the turn is queued until its answer is sent."""
        done = asyncio.Event()

        async def hold() -> None:
            try:
                async with adapter.typing(target):
                    await done.wait()
            except Exception:
                log.debug("typing indicator failed (chat=%s)", target.chat_key)

        task = asyncio.create_task(hold())
        self._typing.add(task)
        task.add_done_callback(self._typing.discard)
        return done

    async def _answer(
        self,
        delivery: Delivery,
        session_id: int,
        anchor_id: int,
        target: ReplyTarget,
        typing_done: asyncio.Event,
        ticket: tuple[str, int],
    ) -> None:
        services = self.services
        message, adapter = delivery.message, delivery.adapter
        covered = self._backlog.begin(*ticket)
        if covered is None:
            typing_done.set()  # a newer question's answer covers this one
            return
        if covered:
            await self._send(adapter, target, COALESCED.format(n=covered + 1))
        timer = services.metrics.turn_started(message.platform)
        stream = open_stream(adapter, target, is_group=message.is_group)
        try:
            request = turn_request(
                services,
                message,
                session_id,
                anchor_id,
                delivery.settings,
                can_remember=not message.is_group or await self.is_admin(message, adapter),
                on_text=stream.update if stream is not None else None,
            )
            result = await services.agent.run_turn(request)
        except BaseException as exc:
            if stream is not None:
                await stream.abandon()
            if not isinstance(exc, Exception):
                raise
            # A turn that breaks in an unexpected way still leaves the asker a notice.
            log.exception("turn failed (chat=%s)", message.chat_key)
            await self._notice_failure(adapter, target, message.chat_key, TURN_FAILED)
            timer.finished(answered=False)
            return
        finally:
            typing_done.set()
        if message.attachments:
            await drop_images(services, message)
        for notice in result.notices:
            await self._send(adapter, target, notice)
        if result.reply is not None:
            code = self._language_codes.get(message.chat_key)
            language = language_for(delivery.settings.language, code)
            reply = localize_trailer(result.reply, STREAM_BROKEN_NOTICE, language) or "…"
            # Stored as members saw it, before it is sent.
            await self._store_reply(session_id, reply)
            if stream is not None:
                if not await finish_stream(stream, reply, message.chat_key):
                    services.metrics.send_failed(target.platform)
            else:
                await self._send(adapter, target, reply, own_words=False)
            await self._failure_notices.recovered(message.chat_key)
        elif stream is not None:
            await stream.abandon()
        if result.reply is None and result.error:
            await self._notice_failure(adapter, target, message.chat_key, result.error)
        timer.finished(answered=result.reply is not None)

    async def _store_reply(self, session_id: int, text: str) -> None:
        message = {"role": "assistant", "content": text}
        row = NewMessage.from_openai(message, self.services.counter.count_message(message))
        await self._appends.append_messages(session_id, [row])

    async def _notice_failure(
        self, adapter: Adapter, target: ReplyTarget, chat_key: str, text: str
    ) -> None:
        await self._send(adapter, target, await self._failure_notices.notice_for(chat_key, text))

    async def is_admin(self, message: InboundMessage, adapter: Adapter) -> bool:
        operators = self.services.config.gateway.operators
        if f"{message.platform}:{message.author_id}" in operators:
            return True
        if not message.is_group:
            return True
        if message.is_admin is not None:
            return message.is_admin
        try:
            return await adapter.is_admin(message)
        except Exception:
            log.exception("admin check failed; treating as not admin (chat=%s)", message.chat_key)
            return False

    async def _send(
        self, adapter: Adapter, target: ReplyTarget, text: str, *, own_words: bool = True
    ) -> None:
        if own_words:  # notices and command replies speak the chat's language; model output not
            settings = await self.services.settings_for(target.chat_key)
            code = self._language_codes.get(target.chat_key)
            text = localize(text, language_for(settings.language, code))
        try:
            await adapter.send(target, text)
        except DeliveryError:
            # The text is already in the transcript (for replies); log so it is not lost silently.
            log.error("reply could not be delivered (chat=%s)", target.chat_key)
            self.services.metrics.send_failed(target.platform)


def _lane_key(session: SessionRecord) -> str:
    return f"{session.chat_key}|{session.scope_user or ''}"

"""The inbound pipeline every adapter feeds: one ordered ingress, then turns in per-chat lanes.

`ingest` returns once its updates are committed (dedup, chat and message in one transaction),
so a platform may acknowledge them then; commands take effect there, in arrival order, and
everything that talks back (replies, answers) waits in the gateway's `TurnQueue`: the chat's
lane in this process by default, the PostgreSQL inbox in the durable gateway.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence

from compactbot.bot.commands.router import CommandContext, run_command
from compactbot.bot.compaction.background import BackgroundCompactions, Notice
from compactbot.bot.compaction.report import ReportSink
from compactbot.bot.events import Adapter, InboundMessage, ReplyTarget
from compactbot.bot.ingress import steps as ingress
from compactbot.bot.ingress.inbound_text import enrich_media, neutralised, reply_quote
from compactbot.bot.ingress.lane_turns import LaneTurns, send_now
from compactbot.bot.ingress.steps import Delivery
from compactbot.bot.ingress.turn_queue import TurnQueue
from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.base import IngestResult, SessionRecord
from compactbot.bot.store.write_batcher import BatchedAppends, BatchedIngest
from compactbot.bot.turns.answer import Answerer, Question
from compactbot.bot.turns.exclusivity import TurnLanes
from compactbot.bot.turns.lanes import LaneScheduler, lane_key

log = logging.getLogger(__name__)

COMMAND_FAILED = "⚠️ That command failed. Nothing was changed."
ALLOWLIST_NOTICE_PLATFORM = "allowlist-notice"
KNOWN_CHATS_MAX = 100_000

Inbound = tuple[InboundMessage, Adapter]


class Gateway:
    """Platform-neutral handling of inbound messages; adapters call `ingest` (or `handle`)."""

    def __init__(
        self,
        services: Services,
        *,
        lanes: TurnLanes | None = None,
        notice: Notice | None = None,
        answers: Answerer | None = None,
        turns: TurnQueue | None = None,
    ) -> None:
        """`turns` decides where answers and replies wait (default: this process's lanes, which
        share `answers`); `notice` how a background compaction's notice reaches the chat."""
        self.services = services
        config = services.config
        self.lanes: TurnLanes = lanes or LaneScheduler(config.gateway.max_concurrent_chats)
        self.compactions = BackgroundCompactions(services, notice)
        self.answers = answers or Answerer(services)
        self._known_chats: set[tuple[str, str | None, str | None, bool]] = set()
        self._order = ingress.ChatOrder()
        # Group commit: messages and replies of many chats arriving together share a transaction.
        self._ingests = BatchedIngest(services.transcript_writes)
        self._appends = BatchedAppends(services.transcript_writes)
        self.turns: TurnQueue = turns or LaneTurns(self.lanes, self.answers, self._appends)
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
        await self.answers.close()

    # --- the ingress ------------------------------------------------------------------------

    async def _deliver(self, message: InboundMessage, adapter: Adapter) -> Delivery:
        settings = await self.services.settings_for(message.chat_key, message.parent_chat_key)
        chat = (message.chat_key, message.chat_title, message.parent_chat_key, message.is_group)
        self.answers.languages.remember(message)
        # A reply brings the message it answers, found in the archive if compacted long ago.
        quote = await reply_quote(self.services.revisions, message) if message.reply_to else None
        admin = await ingress.author_admin(message, lambda: self.is_admin(message, adapter))
        delivery = ingress.deliver(
            message,
            adapter,
            settings,
            self.services.counter,
            known_chat=chat in self._known_chats,
            quote=quote,
            author_admin=admin,
        )
        return self.turns.stored_with(delivery)

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
        lane = lane_key(session.chat_key, session.scope_user)
        self.services.metrics.message_received(message.platform, message.chat_key)
        if delivery.command is not None:
            await self._run_command(delivery, session, lane)
            return
        if result.message_id is None:
            return
        if message.attachments and not (delivery.addressed and self.turns.turn_reads_files):
            # Files are read in the chat's lane, so the answer after them sees what they hold.
            stored_id, services = result.message_id, self.services
            self.lanes.submit(lane, lambda: enrich_media(services, message, stored_id, adapter))
        target = ReplyTarget.for_message(message)
        self.compactions.after_store(session, delivery.settings, adapter, target)
        if delivery.addressed:
            question = Question(message, adapter, session.id, result.message_id, delivery.settings)
            await self.turns.answer(question, lane)

    async def _run_command(self, delivery: Delivery, session: SessionRecord, lane: str) -> None:
        message, adapter = delivery.message, delivery.adapter
        target = ReplyTarget.for_message(message)

        async def report(text: str) -> None:
            await self.turns.report(lane, adapter, target, text)

        assert delivery.command is not None
        ctx = CommandContext(message, adapter, self, session.id, delivery.settings, report)
        try:
            replies = await run_command(delivery.command, ctx)
        except Exception:
            log.exception("command failed (chat=%s)", message.chat_key)
            replies = [COMMAND_FAILED]
        await self.turns.queue_replies(lane, adapter, target, replies)

    async def _refuse_chat(self, message: InboundMessage, adapter: Adapter) -> None:
        # Only an addressed message uses up the one notice: group chatter seen first must not
        # leave the chat without ever being told.
        if not message.addressed:
            return
        first = await self.services.dedup.mark_update_processed(
            ALLOWLIST_NOTICE_PLATFORM, message.chat_key
        )
        if first:
            await self._say(
                adapter,
                ReplyTarget.for_message(message),
                "compactbot is not enabled in this chat. Ask the bot's operator to allow it.",
            )

    async def is_admin(self, message: InboundMessage, adapter: Adapter) -> bool:
        return await self.answers.is_admin(message, adapter)

    async def _say(self, adapter: Adapter, target: ReplyTarget, text: str) -> None:
        said = await self.answers.languages.localized(target.chat_key, text)
        await send_now(adapter, target, said, self.services.metrics)

"""The inbound pipeline every adapter feeds: one ordered ingress, then turns in per-chat lanes.

`handle` passes an update down the ingress chain (`steps`: allow-list, settings and session,
dedup and store; then commands, files and compaction, answer) and returns once it is committed,
so a platform may acknowledge it then. Commands take effect there, in arrival order; everything
that talks back (replies, answers) waits in the gateway's `TurnQueue`: the chat's lane in this
process by default, the PostgreSQL inbox in the durable gateway.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from compactbot.bot.commands.router import Command, CommandContext, run_command
from compactbot.bot.compaction.background import BackgroundCompactions, Notice
from compactbot.bot.compaction.report import ReportSink
from compactbot.bot.events import Adapter, InboundMessage, ReplyTarget
from compactbot.bot.ingress import steps
from compactbot.bot.ingress.chat_order import ChatOrder
from compactbot.bot.ingress.inbound_text import enrich_media, neutralised
from compactbot.bot.ingress.lane_turns import LaneTurns, send_now
from compactbot.bot.ingress.steps import Arrival, Next, Stored
from compactbot.bot.ingress.turn_queue import TurnQueue
from compactbot.bot.services import Services
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.store.write_batcher import BatchedAppends, BatchedIngest
from compactbot.bot.turns.answer import Answerer, Question
from compactbot.bot.turns.exclusivity import TurnLanes
from compactbot.bot.turns.lanes import LaneScheduler

log = logging.getLogger(__name__)

COMMAND_FAILED = "⚠️ That command failed. Nothing was changed."
ALLOWLIST_NOTICE_PLATFORM = "allowlist-notice"


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
        self._order = ChatOrder()
        # Group commit: messages and replies of many chats arriving together share a transaction.
        self._ingests = BatchedIngest(services.transcript_writes)
        self._appends = BatchedAppends(services.transcript_writes)
        self.turns: TurnQueue = turns or LaneTurns(self.lanes, self.answers, self._appends)
        # Called with a chat key after /config changes it (the overnight scheduler listens).
        self.settings_listeners: list[Callable[[str], Awaitable[None]]] = []
        known = steps.KnownChats()
        after_store = steps.rule_authors(
            services.revisions,
            self.answers.is_admin,
            self._commands(self._files_and_compaction(self._answer)),
        )
        self._chain = steps.allow_list(
            config.gateway.allowed_chats,
            self._refuse_chat,
            self._language(
                steps.settle(
                    services,
                    known,
                    self.turns.stored_with,
                    steps.store(self._ingests, known, services.metrics, after_store),
                )
            ),
        )

    async def handle(self, message: InboundMessage, adapter: Adapter) -> None:
        """One update down the chain; returns after it is stored (and its command took effect).

        The chat's order is held throughout, so "/new" then a message puts the message in the
        new session, and a command is committed and run before the chat's next update is stored.
        """
        async with self._order.holding(message.chat_key):
            await self._chain(Arrival(neutralised(message), adapter))

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

    # --- the gateway's own steps ----------------------------------------------------------------

    def _language(self, next_step: Next[Arrival]) -> Next[Arrival]:
        """An allowed chat's language, as its platform reports it, for our own words there."""

        async def step(arrival: Arrival) -> None:
            self.answers.languages.remember(arrival.message)
            await next_step(arrival)

        return step

    def _commands(self, next_step: Next[Stored]) -> Next[Stored]:
        """Commands end here (the router's admin filter decides who may run which); a message
        goes on when a row was stored for it."""

        async def step(stored: Stored) -> None:
            command = stored.delivery.command
            if command is not None:
                await self._run_command(stored, command)
            elif stored.message_id is not None:
                await next_step(stored)

        return step

    def _files_and_compaction(self, next_step: Next[Stored]) -> Next[Stored]:
        """A message's files are read in the chat's lane, a compaction started if it is due;
        an addressed message goes on to be answered."""

        async def step(stored: Stored) -> None:
            delivery, message_id = stored.delivery, stored.message_id
            assert message_id is not None
            message, adapter = delivery.message, delivery.adapter
            if message.attachments and not (delivery.addressed and self.turns.turn_reads_files):
                # In the lane, so the answer queued after them sees what they hold.
                services = self.services
                self.lanes.submit(
                    stored.lane, lambda: enrich_media(services, message, message_id, adapter)
                )
            target = ReplyTarget.for_message(message)
            self.compactions.after_store(stored.session, delivery.settings, adapter, target)
            if delivery.addressed:
                await next_step(stored)

        return step

    async def _answer(self, stored: Stored) -> None:
        """The last step: the turn queue checks the limits and queues the answer."""
        delivery, message_id = stored.delivery, stored.message_id
        assert message_id is not None
        question = Question(
            delivery.message, delivery.adapter, stored.session.id, message_id, delivery.settings
        )
        await self.turns.answer(question, stored.lane)

    async def _run_command(self, stored: Stored, command: Command) -> None:
        message, adapter = stored.delivery.message, stored.delivery.adapter
        target = ReplyTarget.for_message(message)
        lane = stored.lane

        async def report(text: str) -> None:
            await self.turns.report(lane, adapter, target, text)

        settings = stored.delivery.settings
        ctx = CommandContext(message, adapter, self, stored.session.id, settings, report)
        try:
            replies = await run_command(command, ctx)
        except Exception:
            log.exception("command failed (chat=%s)", message.chat_key)
            replies = [COMMAND_FAILED]
        await self.turns.queue_replies(lane, adapter, target, replies)

    async def _refuse_chat(self, arrival: Arrival) -> None:
        message, adapter = arrival.message, arrival.adapter
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

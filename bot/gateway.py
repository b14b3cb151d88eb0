"""The inbound pipeline every adapter feeds: dedup, store, gate, hygiene, agent turn, reply."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.chat_settings import ChatSettings
from bot.commands import CommandContext, parse_command, run_command
from bot.compaction import CompactionReport
from bot.events import Adapter, DeliveryError, InboundMessage, ReplyTarget
from bot.i18n import language_for, localize, localize_trailer
from bot.inbound_text import drop_images, enrich_media, reply_quote, transcript_text
from bot.lanes import LaneScheduler
from bot.limits import RATE_WINDOW_SECONDS, NoticeGate, RateLimiter, budget_exceeded, utc_day
from bot.llm_stream import STREAM_BROKEN_NOTICE
from bot.runner import TurnRequest
from bot.services import Services
from bot.store.base import NewMessage, SessionRecord
from bot.streaming import finish_stream, open_stream
from compression.hygiene import hygiene_reason

log = logging.getLogger(__name__)

# Don't repeat "I can't answer" in a chat more often than this while the model stays down.
FAILURE_NOTICE_INTERVAL_SECONDS = 600.0
LOCK_POLL_SECONDS = 0.05
ALLOWLIST_NOTICE_PLATFORM = "allowlist-notice"
KNOWN_CHATS_MAX = 100_000
# The budget notice is keyed by UTC day, so this only bounds how long a day's key is kept.
BUDGET_NOTICE_INTERVAL_SECONDS = 86_400.0


@dataclass(frozen=True, slots=True)
class _Refusal:
    text: str
    say: bool  # False when the chat (or member) was already told within the window


@dataclass(frozen=True, slots=True)
class _Pending:
    message: InboundMessage
    adapter: Adapter
    session_id: int
    anchor_id: int


class Gateway:
    """Platform-neutral handling of inbound messages; adapters call `handle`."""

    def __init__(self, services: Services) -> None:
        self.services = services
        config = services.config
        self.lanes = LaneScheduler(config.gateway.max_concurrent_chats)
        self._rate = RateLimiter(clock=services.clock)
        self._rate_notices = NoticeGate(RATE_WINDOW_SECONDS, clock=services.clock)
        self._budget_notices = NoticeGate(BUDGET_NOTICE_INTERVAL_SECONDS, clock=services.clock)
        self._failure_noticed: dict[str, float] = {}
        self._known_chats: set[tuple[str, str | None, str | None, bool]] = set()
        # The platform language code last seen per chat, for notices when language is "auto".
        self._language_codes: dict[str, str] = {}
        self._background: set[asyncio.Task[CompactionReport]] = set()
        # Called with a chat key after /config changes it (the overnight scheduler listens).
        self.settings_listeners: list[Callable[[str], Awaitable[None]]] = []

    async def handle(self, message: InboundMessage, adapter: Adapter) -> None:
        """Store the message at once; answer it later in its chat's lane if it was addressed."""
        store = self.services.store
        if message.update_id is not None and not await store.mark_update_processed(
            message.platform, message.update_id
        ):
            log.info("duplicate update ignored (chat=%s)", message.chat_key)
            return
        if not self._allowed(message.chat_key):
            await self._refuse_chat(message, adapter)
            return
        chat = (message.chat_key, message.chat_title, message.parent_chat_key, message.is_group)
        if chat not in self._known_chats:
            await store.upsert_chat(
                message.chat_key,
                message.platform,
                title=message.chat_title,
                parent_key=message.parent_chat_key,
                is_group=message.is_group,
            )
            # A write per message only to repeat what the row already says is wasted.
            if len(self._known_chats) >= KNOWN_CHATS_MAX:
                self._known_chats.clear()
            self._known_chats.add(chat)
        if message.language_code and len(self._language_codes) < KNOWN_CHATS_MAX:
            self._language_codes[message.chat_key] = message.language_code
        settings = await self.services.settings_for(message.chat_key)
        session = await store.active_session(message.chat_key, self._scope(message, settings))
        lane = _lane_key(session)
        command = parse_command(message.text)
        if command is not None:
            ctx = CommandContext(message, adapter, self, session.id, settings)
            self.lanes.submit(lane, lambda: self._run_command(ctx, command))
            return
        if not message.text.strip() and not message.attachments:
            return
        anchor_id = await self._store_user_message(message, session, settings)
        if message.attachments:
            services = self.services
            self.lanes.submit(lane, lambda: enrich_media(services, message, anchor_id, adapter))
        if not message.addressed:
            return
        refusal = await self._limit_refusal(message, settings)
        if refusal is not None:
            if refusal.say:
                await self._send(adapter, ReplyTarget.for_message(message), refusal.text)
            return
        pending = _Pending(message, adapter, session.id, anchor_id)
        self.lanes.submit(lane, lambda: self._answer(pending, settings))

    async def settings_changed(self, chat_key: str) -> None:
        for listener in self.settings_listeners:
            try:
                await listener(chat_key)
            except Exception:
                log.exception("settings listener failed (chat=%s)", chat_key)

    async def close(self) -> None:
        await self.lanes.close()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    def _allowed(self, chat_key: str) -> bool:
        allowed = self.services.config.gateway.allowed_chats
        if "*" in allowed or chat_key.startswith("console:"):
            return True
        return any(chat_key == item or chat_key.startswith(item + ":") for item in allowed)

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

    def _scope(self, message: InboundMessage, settings: ChatSettings) -> str | None:
        if message.is_group and settings.memory_scope == "per_user":
            return message.author_id
        return None

    async def _store_user_message(
        self, message: InboundMessage, session: SessionRecord, settings: ChatSettings
    ) -> int:
        shared = message.is_group and settings.memory_scope == "shared"
        quote = await reply_quote(self.services.store, message)
        content = transcript_text(message, shared=shared, quote=quote)
        row = NewMessage(
            role="user",
            content=content,
            tokens=self.services.counter.count_message({"role": "user", "content": content}),
            author_id=message.author_id,
            author_name=message.author_name,
            platform_message_id=message.platform_message_id,
        )
        (message_id,) = await self.services.store.append_messages(session.id, [row])
        return message_id

    async def _limit_refusal(
        self, message: InboundMessage, settings: ChatSettings
    ) -> _Refusal | None:
        """Why this message gets no answer, if a limit applies; each is said once per window."""
        member = (message.chat_key, message.author_id)
        if message.is_group and not self._rate.allow(member, settings.user_rate_limit_per_minute):
            return _Refusal(
                f"{message.author_name}, you're sending messages faster than I can answer; "
                "please slow down a little.",
                say=self._rate_notices.first(member),
            )
        now = self.services.clock()
        if await budget_exceeded(
            self.services.store, message.chat_key, settings.daily_token_budget, now=now
        ):
            return _Refusal(
                "This chat has used its token budget for today; I'll be back tomorrow (UTC).",
                say=self._budget_notices.first((message.chat_key, utc_day(now))),
            )
        return None

    async def _run_command(self, ctx: CommandContext, command: tuple[str, str]) -> None:
        name, args = command
        for reply in await run_command(name, args, ctx):
            await self._send(ctx.adapter, ReplyTarget.for_message(ctx.message), reply)

    async def _answer(self, pending: _Pending, settings: ChatSettings) -> None:
        services = self.services
        message = pending.message
        target = ReplyTarget.for_message(message)
        await self._wait_for_compaction(pending.session_id)
        anchor = await self._hygiene(pending, settings, target)
        can_remember = not message.is_group or await self.is_admin(message, pending.adapter)
        stream = open_stream(pending.adapter, target, is_group=message.is_group)
        request = TurnRequest(
            session_id=pending.session_id,
            chat_key=message.chat_key,
            anchor_id=anchor,
            author_id=message.author_id,
            author_name=message.author_name,
            can_remember=can_remember,
            settings=services.compaction_settings(settings),
            compression_enabled=services.config.compression.enabled,
            on_text=stream.update if stream is not None else None,
            model=services.model_for(settings),
        )
        try:
            async with pending.adapter.typing(target):
                result = await services.agent.run_turn(request)
        except BaseException:
            if stream is not None:
                await stream.abandon()
            raise
        if message.attachments:
            await drop_images(services, message)
        for notice in result.notices:
            await self._send(pending.adapter, target, notice)
        if result.reply is not None:
            language = language_for(settings.language, self._language_codes.get(message.chat_key))
            reply = localize_trailer(result.reply, STREAM_BROKEN_NOTICE, language)
            await self._store_reply(pending.session_id, reply)
            if stream is not None:
                await finish_stream(stream, reply or "…", message.chat_key)
            else:
                await self._send(pending.adapter, target, reply or "…", own_words=False)
            self._failure_noticed.pop(message.chat_key, None)
        elif stream is not None:
            await stream.abandon()
        if result.reply is None and result.error:
            await self._notice_failure(pending.adapter, target, message.chat_key, result.error)

    async def _hygiene(self, pending: _Pending, settings: ChatSettings, target: ReplyTarget) -> int:
        """Compact before the agent runs when the session is near full; fails open."""
        services = self.services
        session = await services.store.get_session(pending.session_id)
        tokens = max(session.compressor.last_prompt_tokens, session.active_tokens)
        reason = hygiene_reason(
            message_count=session.active_messages,
            tokens=tokens,
            context_length=services.window_for(settings),
            threshold=settings.hygiene_threshold,
            hard_message_limit=settings.hygiene_hard_message_limit,
        )
        if reason is None or not services.config.compression.enabled:
            return pending.anchor_id
        task = asyncio.create_task(
            services.compactor.compact(
                session.id,
                trigger="hygiene",
                settings=services.compaction_settings(settings),
                system_prompt=await services.system_prompt_for(pending.message.chat_key),
                upto_id=pending.anchor_id,
            )
        )
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        wait = services.config.compression.hygiene_max_wait_seconds
        try:
            report = await asyncio.wait_for(asyncio.shield(task), wait)
        except TimeoutError:
            log.warning(
                "hygiene still running after %ss; answering uncompressed (chat=%s)",
                wait,
                pending.message.chat_key,
            )
            return pending.anchor_id
        except Exception:
            log.exception(
                "hygiene failed; answering uncompressed (chat=%s)", pending.message.chat_key
            )
            return pending.anchor_id
        if reason == "hard_limit" and report.changed:
            await self._send(
                pending.adapter,
                target,
                f"🧹 This chat reached {report.messages_before} messages, so I compacted the "
                f"older ones into a summary ({report.messages_before} → {report.messages_after}). "
                "Nothing was deleted; /status shows details.",
            )
        if report.notice:
            await self._send(pending.adapter, target, report.notice)
        return report.new_anchor_id or pending.anchor_id

    async def _wait_for_compaction(self, session_id: int) -> None:
        """A compaction in flight finishes first, so the turn sees its result."""
        store = self.services.store
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.services.config.compression.hygiene_max_wait_seconds
        # The lock is a database row another process may hold, so there is no event to wait on.
        while await store.lock_holder(session_id) is not None and loop.time() < deadline:  # noqa: ASYNC110
            await asyncio.sleep(LOCK_POLL_SECONDS)

    async def _store_reply(self, session_id: int, text: str) -> None:
        message = {"role": "assistant", "content": text}
        row = NewMessage.from_openai(message, self.services.counter.count_message(message))
        await self.services.store.append_messages(session_id, [row])

    async def _notice_failure(
        self, adapter: Adapter, target: ReplyTarget, chat_key: str, text: str
    ) -> None:
        now = self.services.clock()
        last = self._failure_noticed.get(chat_key)
        if last is not None and now - last < FAILURE_NOTICE_INTERVAL_SECONDS:
            return
        self._failure_noticed[chat_key] = now
        await self._send(adapter, target, text)

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


def _lane_key(session: SessionRecord) -> str:
    return f"{session.chat_key}|{session.scope_user or ''}"

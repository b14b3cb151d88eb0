"""The Telegram platform: python-telegram-bot's Bot, inbound updates, admin checks, replies.

Updates arrive through our own ingress, which acknowledges only what is stored: the getUpdates
loop in `adapters/telegram_polling.py` or the endpoint in `adapters/telegram_webhook.py`, both
through `adapters/telegram_ingest.py`. Decisions about an update live in
`adapters/telegram_gating.py` (pure); sending, fallbacks and retries in
`adapters/telegram_delivery.py`. The token never reaches a log line or an exception
message from here: PTB's own InvalidToken text contains it, so start-up errors are redacted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Literal
from urllib.parse import urlsplit

from telegram import (
    BotCommand,
    BotCommandScope,
    BotCommandScopeAllChatAdministrators,
    BotCommandScopeAllGroupChats,
    BotCommandScopeAllPrivateChats,
    BotCommandScopeDefault,
    ChatMember,
    Update,
)
from telegram.error import TelegramError
from telegram.ext import Application, ApplicationBuilder

from compactbot.adapters.telegram_delivery import TelegramSender, WireMarkingLimiter
from compactbot.adapters.telegram_gating import (
    PLATFORM,
    Addressing,
    BotSelf,
    addressing,
    migration,
    skip_reason,
    to_inbound,
)
from compactbot.adapters.telegram_ingest import UpdateIngest
from compactbot.adapters.telegram_media import download_file
from compactbot.adapters.telegram_pacing import SharedPacing
from compactbot.adapters.telegram_polling import UpdatePoller
from compactbot.adapters.telegram_stream import open_telegram_stream
from compactbot.adapters.telegram_webhook import WebhookServer
from compactbot.bot.events import (
    Attachment,
    DeliveryError,
    InboundMessage,
    ReplyTarget,
    StartupError,
)
from compactbot.bot.ingress.admin_cache import AdminCache
from compactbot.bot.ingress.gateway import Gateway
from compactbot.bot.ingress.message_changes import apply_edit
from compactbot.bot.plugins import RUN, Role
from compactbot.bot.settings.config import Config, TelegramConfig
from compactbot.bot.turns.streaming import ReplyStream

log = logging.getLogger(__name__)

ADMIN_STATUSES = frozenset({ChatMember.ADMINISTRATOR, ChatMember.OWNER})
# On stop, replies already being written get this long to reach the chat before PTB shuts down.
STOP_DRAIN_SECONDS = 5.0
# PTB logs the API URL (which embeds the token) and every request's parameters (message text)
# at DEBUG, so its loggers stay at INFO even when the operator turns on DEBUG.
PTB_LOGGER = "telegram"
# With max_retries=0 PTB's limiter only logs a traceback for each 429 we then handle ourselves.
RATE_LIMITER_LOGGER = "telegram.ext.AIORateLimiter"
HTTPX_LOGGER = "httpx"
USER_COMMANDS = (
    BotCommand("help", "What I can do"),
    BotCommand("status", "Context gauge and compactions"),
    BotCommand("pins", "Facts I always keep"),
    BotCommand("usage", "Tokens used today and this month"),
    BotCommand("summary", "What you missed: since your last message, 2h, @name or a topic"),
    BotCommand("config", "This chat's settings"),
)
ADMIN_COMMANDS = (
    *USER_COMMANDS,
    BotCommand("compress", "Compact older history now"),
    BotCommand("compact", "Same as /compress"),
    BotCommand("new", "Start a new conversation"),
    BotCommand("reset", "Same as /new"),
    BotCommand("pin", "Keep a fact verbatim forever"),
    BotCommand("unpin", "Drop a pinned fact"),
    BotCommand("console", "Sign-in link to the web console, sent privately"),
)


class TelegramStartError(StartupError):
    """Telegram refused the bot at start-up (bad token, unreachable API, webhook refused)."""


class TelegramPlatform:
    """The Adapter the gateway answers through, and the platform `compactbot run` starts."""

    name = "telegram"
    platform = PLATFORM
    # Every request goes through WireMarkingLimiter, which calls bot.wire.leaving().
    marks_the_wire: Literal[True] = True

    def __init__(
        self,
        config: Config,
        gateway: Gateway,
        *,
        clock: Callable[[], float] = time.monotonic,
        receive: bool = True,
        shared_pacing: SharedPacing | None = None,
    ) -> None:
        if config.telegram.token is None:
            raise ValueError("TelegramPlatform needs telegram.token (TELEGRAM_BOT_TOKEN)")
        _quiet_library_loggers()
        self._config = config.telegram
        self._gateway = gateway
        self._application = _build_application(config.telegram, shared_pacing)
        self._ingest = UpdateIngest(
            self._application.bot, self._handle_update, gateway.services.dead_letters
        )
        self._poller: UpdatePoller | None = None
        self._webhook: WebhookServer | None = None
        self._sender = TelegramSender(self._application.bot, metrics=gateway.services.metrics)
        # In the store and on wall time: one getChatMember per member for all workers.
        self._admins = AdminCache(
            gateway.services.shared_limits,
            config.gateway.admin_cache_seconds,
            clock=gateway.services.clock,
        )
        self._clock = clock
        self._me: BotSelf | None = None
        self._stopped = False
        # A worker only sends: the ingress owns the webhook (a worker polling would delete it).
        self._receive = receive

    # --- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Connect, publish the command menus, and start polling (or the webhook server)."""
        app = self._application
        try:
            await app.initialize()
            bot = app.bot
            self._me = BotSelf(bot.id, bot.username)
            mode = "sending only"
            if self._receive:
                await self._set_commands()
                mode = await self._start_updates()
        except (TelegramError, OSError) as exc:
            await self.stop()
            raise TelegramStartError(f"telegram: {self._redact(str(exc))}") from None
        log.info("telegram: %s as @%s", mode, self._me.username)

    @property
    def connected(self) -> bool:
        """Taking updates: polling or the webhook server is running (for /readyz)."""
        if not self._receive:
            return self._me is not None and not self._stopped
        if self._poller is not None:
            return self._poller.running
        return self._webhook is not None and self._webhook.running

    async def stop(self) -> None:
        """Stop taking updates, let replies in flight finish briefly, shut down; idempotent."""
        receiving = self._poller is not None or self._webhook is not None
        if self._poller is not None:
            await self._poller.stop()
            self._poller = None
        if self._webhook is not None:
            await self._webhook.stop()
            self._webhook = None
        if receiving:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._gateway.lanes.join(), STOP_DRAIN_SECONDS)
        self._stopped = True
        await self._application.shutdown()

    async def _start_updates(self) -> str:
        bot = self._application.bot
        # Edits update the stored text and member changes the admin cache; channel posts and
        # reactions are nothing we act on.
        allowed = [Update.MESSAGE, Update.EDITED_MESSAGE, Update.CHAT_MEMBER]
        url = self._config.webhook_url
        if url is None:
            await bot.delete_webhook(drop_pending_updates=False)
            self._poller = UpdatePoller(bot, self._ingest, allowed_updates=allowed)
            self._poller.start()
            return "polling"
        secret = self._config.webhook_secret
        assert secret is not None  # the config refuses a webhook URL without a secret
        self._webhook = WebhookServer(
            self._config.webhook_host,
            self._config.webhook_port,
            urlsplit(url).path,
            secret.get_secret_value(),
            self._ingest.ingest,
        )
        await self._webhook.start()
        await bot.set_webhook(
            url,
            secret_token=secret.get_secret_value(),
            allowed_updates=allowed,
            drop_pending_updates=False,
        )
        return f"webhook on {self._config.webhook_listen}"

    async def _set_commands(self) -> None:
        """Everyone's menu, plus the admin-only commands in the menu chat admins see."""
        menus: list[tuple[BotCommandScope, tuple[BotCommand, ...]]] = [
            (BotCommandScopeDefault(), USER_COMMANDS),
            (BotCommandScopeAllPrivateChats(), USER_COMMANDS),
            (BotCommandScopeAllGroupChats(), USER_COMMANDS),
            (BotCommandScopeAllChatAdministrators(), ADMIN_COMMANDS),
        ]
        for scope, commands in menus:
            try:
                await self._application.bot.set_my_commands(commands, scope=scope)
            except TelegramError as exc:
                log.warning(
                    "telegram: setMyCommands for %s failed: %s", scope.type, type(exc).__name__
                )

    # --- inbound -----------------------------------------------------------------------

    async def _handle_update(self, update: Update) -> None:
        """Returns once the update is stored (or needs nothing); raises when it was not."""
        if update.edited_message is not None:
            await self._handle_edit(update)
            return
        if (change := update.chat_member) is not None:
            # A promotion or demotion takes effect at once, not when the cached answer expires.
            member = change.new_chat_member
            is_admin = member.status in ADMIN_STATUSES
            await self._admins.put(PLATFORM, str(change.chat.id), str(member.user.id), is_admin)
            return
        reason = skip_reason(update)
        if reason is not None:
            log.debug("telegram: update %s skipped: %s", update.update_id, reason)
            return
        message = update.message
        assert message is not None and self._me is not None  # skip_reason checked the first
        if moved := migration(message):
            await self._gateway.services.chats.migrate_chat(*moved)
            log.debug("telegram: update %s migrates %s to %s", update.update_id, *moved)
            return
        decision = addressing(message, self._me)
        if decision is Addressing.NOT_FOR_US:
            log.debug("telegram: update %s is for another bot", update.update_id)
            return
        inbound = to_inbound(
            message,
            update.update_id,
            addressed=decision is Addressing.DIRECT,
            mentions_others=decision is Addressing.MENTIONS_OTHERS,
        )
        await self._gateway.handle(inbound, self)

    async def _handle_edit(self, update: Update) -> None:
        edited = update.edited_message
        if edited is None or edited.from_user is None or self._me is None:
            return
        if edited.text is None and edited.caption is None:
            return
        inbound = to_inbound(edited, update.update_id, addressed=False)
        await apply_edit(self._gateway.services, inbound)

    # --- Adapter -----------------------------------------------------------------------

    async def send(self, target: ReplyTarget, text: str) -> None:
        if self._stopped:
            raise DeliveryError("telegram platform is stopped")
        await self._sender.send(target, text)

    def open_stream(self, target: ReplyTarget, *, is_group: bool) -> ReplyStream | None:
        """Drafts in private chats, one paced edited message in groups and topics."""
        if self._stopped:
            return None
        bot = self._application.bot
        return open_telegram_stream(
            bot, self._sender, target, private=not is_group, clock=self._clock
        )

    def typing(self, target: ReplyTarget) -> contextlib.AbstractAsyncContextManager[None]:
        if self._stopped:
            return contextlib.nullcontext()
        return self._sender.typing(target)

    async def download(self, attachment: Attachment, max_bytes: int) -> bytes:
        """A file of an inbound message, refused above `max_bytes` (before and after fetching)."""
        return await download_file(self._application.bot, attachment, max_bytes)

    async def is_admin(self, message: InboundMessage) -> bool:
        """administrator or creator per getChatMember, cached; any error counts as no."""
        if not message.is_group:
            return True
        cached = await self._admins.get(PLATFORM, message.chat_id, message.author_id)
        if cached is not None:
            return cached
        try:
            member = await self._application.bot.get_chat_member(
                int(message.chat_id), int(message.author_id)
            )
        except (TelegramError, ValueError) as exc:
            log.warning(
                "telegram: admin check in %s failed: %s", message.chat_id, type(exc).__name__
            )
            return False
        result = member.status in ADMIN_STATUSES
        await self._admins.put(PLATFORM, message.chat_id, message.author_id, result)
        return result

    def _redact(self, text: str) -> str:
        token = self._config.token
        secret = token.get_secret_value() if token is not None else ""
        return text.replace(secret, "<token>") if secret else text


def _quiet_library_loggers() -> None:
    ptb = logging.getLogger(PTB_LOGGER)
    if ptb.getEffectiveLevel() < logging.INFO:
        ptb.setLevel(logging.INFO)
    logging.getLogger(RATE_LIMITER_LOGGER).setLevel(logging.CRITICAL)
    # httpx logs every request URL at INFO, and Bot API URLs embed the token: keep it out even
    # when the process was not started through `compactbot` (whose logging setup does the same).
    http = logging.getLogger(HTTPX_LOGGER)
    if http.getEffectiveLevel() < logging.WARNING:
        http.setLevel(logging.WARNING)


def _build_application(config: TelegramConfig, shared: SharedPacing | None) -> Application:
    assert config.token is not None
    limiter = WireMarkingLimiter(shared=shared, max_retries=0)  # TelegramSender handles 429
    builder = (
        ApplicationBuilder()
        .token(config.token.get_secret_value())
        .rate_limiter(limiter)
        .job_queue(None)  # PTB would start an APScheduler we never use
        .updater(None)  # our own polling loop and webhook acknowledge only what is stored
    )
    if config.api_base_url:
        base = config.api_base_url.rstrip("/")
        builder = builder.base_url(base)
        if base.endswith("/bot"):
            builder = builder.base_file_url(base.removesuffix("/bot") + "/file/bot")
    return builder.build()


def platform_from_config(
    config: Config, gateway: Gateway, *, role: Role = RUN
) -> TelegramPlatform | None:
    """The `compactbot.platforms` entry point: Telegram when a bot token is configured.

    A worker sends only; the ingress serves the webhook, so it needs TELEGRAM_WEBHOOK_URL.
    """
    if config.telegram.token is None:
        return None
    if role.name == "ingress" and config.telegram.webhook_url is None:
        raise StartupError(
            "compactbot ingress serves the Telegram webhook: set TELEGRAM_WEBHOOK_URL"
        )
    if role.name != "worker":
        return TelegramPlatform(config, gateway)
    postgres = gateway.services.postgres
    # Workers send for one bot: Telegram's limits are the fleet's, kept in the database.
    shared = SharedPacing(postgres.pacing()) if postgres is not None else None
    return TelegramPlatform(config, gateway, receive=False, shared_pacing=shared)

"""Discord through discord.py: gateway events in, replies out, slash commands for the commands."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import discord
from discord import app_commands

from compactbot.adapters.discord_client import PlatformClient, ShardedClient
from compactbot.adapters.discord_delivery import (
    NO_PINGS,
    PRIVATE_EXTRA,
    SEND_TIMEOUT_SECONDS,
    deliver_chunk,
    followup,
)
from compactbot.adapters.discord_gating import (
    PLATFORM,
    ignore_reason,
    is_admin_permissions,
    message_facts,
    to_inbound,
)
from compactbot.adapters.discord_http import rate_limit_trace
from compactbot.adapters.discord_media import download_attachment
from compactbot.adapters.discord_slash import (
    PRIVATE_REPLY_COMMANDS,
    PendingInteractions,
    slash_commands,
    slash_inbound,
)
from compactbot.adapters.discord_stream import TRANSPORT_ERRORS, DiscordStreamSurface
from compactbot.adapters.discord_text import discord_chunks, neutralize_mass_mentions
from compactbot.bot.events import (
    Adapter,
    Attachment,
    DeliveryError,
    InboundMessage,
    ReplyTarget,
)
from compactbot.bot.plugins import RUN, Role
from compactbot.bot.turns.lanes import LaneScheduler
from compactbot.bot.turns.streaming import PacedStream, ReplyStream
from compactbot.bot.workers.identify_pacing import IdentifyPacing

if TYPE_CHECKING:
    from compactbot.bot.services import Services
    from compactbot.bot.settings.config import Config

log = logging.getLogger(__name__)

READY_TIMEOUT_SECONDS = 60.0  # login + gateway handshake + GUILD_CREATEs on a slow link
CLOSE_TIMEOUT_SECONDS = 10.0
COMMAND_SYNC_TIMEOUT_SECONDS = 30.0
MEMBER_LOOKUP_TIMEOUT_SECONDS = 10.0

# Channels whose events are stored at once; a channel's own events always go one at a time.
INBOUND_CHANNELS_CONCURRENT = 64


class MessageGateway(Protocol):
    """What the adapter needs of `bot.gateway.Gateway`; tests wrap one to see what it handled."""

    @property
    def services(self) -> Services: ...

    async def handle(self, message: InboundMessage, adapter: Adapter) -> None: ...


class DiscordPlatform:
    """The Discord adapter and its lifecycle: `start()` returns once the client is ready."""

    name = "discord"
    platform = PLATFORM

    def __init__(
        self,
        config: Config,
        gateway: MessageGateway,
        *,
        client_options: dict[str, Any] | None = None,
        shards: tuple[tuple[int, ...], int] | None = None,
        identify_pacing: IdentifyPacing | None = None,
    ) -> None:
        if config.discord.token is None:
            raise ValueError("DiscordPlatform needs discord.token (DISCORD_BOT_TOKEN)")
        self._config = config
        self._token = config.discord.token
        self._gateway = gateway
        self._client_options = dict(client_options or {})
        self._client_class = PlatformClient
        self.identify_pacing = identify_pacing
        if shards is not None:
            self._client_class = ShardedClient
            self._client_options |= {"shard_ids": list(shards[0]), "shard_count": shards[1]}
        self._client: PlatformClient | None = None
        self._task: asyncio.Task[None] | None = None
        self._interactions = PendingInteractions()
        # discord.py runs each event in its own task; this queues a channel's events in the
        # order they arrived, before anything awaits, so they are stored in that order.
        self._inbound = LaneScheduler(INBOUND_CHANNELS_CONCURRENT)

    @property
    def services(self) -> Services:
        return self._gateway.services

    # --- lifecycle ------------------------------------------------------------------------

    async def start(self) -> None:
        """Log in and connect; raise if the client fails or is not ready in time."""
        if self._task is not None:
            return
        trace = rate_limit_trace(self._gateway.services.metrics)
        client = self._client_class(self, **{"http_trace": trace, **self._client_options})
        self._client = client
        self._task = asyncio.create_task(
            client.start(self._token.get_secret_value()), name="discord-client"
        )
        self._task.add_done_callback(_report_client_exit)
        ready = asyncio.create_task(client.wait_until_ready(), name="discord-ready")
        done, _ = await asyncio.wait(
            {ready, self._task}, timeout=READY_TIMEOUT_SECONDS, return_when=asyncio.FIRST_COMPLETED
        )
        if ready in done:
            return
        ready.cancel()
        failed = self._task if self._task in done else None
        error = failed.exception() if failed is not None else None
        await self.stop()
        if error is not None:
            raise error  # LoginFailure for a bad token, PrivilegedIntentsRequired, ...
        raise TimeoutError(f"discord client not ready after {READY_TIMEOUT_SECONDS:.0f}s")

    @property
    def connected(self) -> bool:
        """Logged in with the gateway open (for /readyz)."""
        client = self._client
        return client is not None and client.is_ready() and not client.is_closed()

    async def stop(self) -> None:
        """Close the connection and wait for the client task; safe to call twice."""
        client, task = self._client, self._task
        self._client, self._task = None, None
        with contextlib.suppress(Exception):
            await self._inbound.join()
        if client is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.close(), CLOSE_TIMEOUT_SECONDS)
        if task is not None:
            if not task.done():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT_SECONDS)
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if self.identify_pacing is not None:
            await self.identify_pacing.close()

    async def setup_commands(self, tree: app_commands.CommandTree[Any]) -> None:
        """Register the slash commands and sync them; a failed sync leaves text commands working."""
        for command in slash_commands(self._run_slash):
            tree.add_command(command)
        guild_id = self._config.discord.guild_id
        guild = discord.Object(id=guild_id) if guild_id is not None else None
        if guild is not None:
            # Guild commands appear at once; global ones can take an hour to reach clients.
            tree.copy_global_to(guild=guild)
        try:
            synced = await asyncio.wait_for(tree.sync(guild=guild), COMMAND_SYNC_TIMEOUT_SECONDS)
        except (discord.HTTPException, app_commands.AppCommandError, *TRANSPORT_ERRORS):
            log.exception("discord: slash command sync failed; text /commands still work")
            return
        log.info(
            "discord: synced %d slash commands %s",
            len(synced),
            f"to guild {guild_id}" if guild_id else "globally",
        )

    # --- inbound --------------------------------------------------------------------------

    def on_message(self, message: discord.Message) -> None:
        """Queue the message behind its channel's earlier ones; nothing here may await."""
        client = self._client
        if client is None or client.user is None:
            return
        bot_id = str(client.user.id)
        facts = message_facts(message)
        if ignore_reason(facts, bot_id) is not None:
            return
        inbound = to_inbound(facts, bot_id=bot_id)
        self._inbound.submit(facts.channel_id, lambda: self._handle(inbound))

    async def _run_slash(self, interaction: discord.Interaction, name: str, args: str) -> None:
        inbound = slash_inbound(interaction, name, args)
        try:
            # Discord wants an answer within 3 s; the reply follows through the followup webhook.
            private = name in PRIVATE_REPLY_COMMANDS
            interaction.extras[PRIVATE_EXTRA] = private
            await interaction.response.defer(thinking=True, ephemeral=private)
            self._interactions.add(interaction)
        except (discord.HTTPException, *TRANSPORT_ERRORS):
            # Too late to acknowledge: run the command anyway and answer in the channel.
            log.warning("discord: could not defer a slash command (chat=%s)", inbound.chat_key)
        channel = inbound.thread_id or inbound.chat_id
        self._inbound.submit(channel, lambda: self._handle(inbound))

    def after_channel(self, channel_id: str, change: Callable[[], Awaitable[None]]) -> None:
        """A member's edit or delete, run behind the channel's messages not yet stored: an
        edit that overtook its message would find nothing to change and be lost."""
        self._inbound.submit(channel_id, change)

    async def _handle(self, inbound: InboundMessage) -> None:
        try:
            await self._gateway.handle(inbound, self)
        except Exception:
            log.exception("discord: message handling failed (chat=%s)", inbound.chat_key)

    # --- Adapter protocol -----------------------------------------------------------------

    async def send(self, target: ReplyTarget, text: str) -> None:
        """Chunks of at most 2000 characters that ping nobody; the first replies to the trigger."""
        await self._send(target, text, None)

    async def send_once(self, target: ReplyTarget, text: str, nonce: str) -> None:
        """`send` whose chunks carry nonces: Discord drops a repeat of any of them (outbox)."""
        await self._send(target, text, nonce)

    async def _send(self, target: ReplyTarget, text: str, nonce: str | None) -> None:
        chunks = [c for c in discord_chunks(neutralize_mass_mentions(text)) if c.strip()]
        interaction = self._interactions.get(target.reply_to_message_id)
        reference = None if interaction else self._reference(target)
        for part, chunk in enumerate(chunks):
            if interaction is not None and await self._followup(interaction, target, chunk):
                continue
            if interaction is not None and interaction.extras.get(PRIVATE_EXTRA):
                # Meant for the asker only: never posted to the whole channel instead.
                raise DeliveryError("private slash reply could not be delivered")
            interaction = None  # its webhook is gone: the rest goes to the channel
            await self._deliver(target, chunk, reference, f"{nonce}.{part}" if nonce else None)
            reference = None

    def open_stream(self, target: ReplyTarget, *, is_group: bool) -> ReplyStream | None:
        """One paced, edited message; slash commands answer through their followup instead."""
        if self._client is None or self._interactions.get(target.reply_to_message_id):
            return None

        async def deliver(chunk: str, reference: discord.MessageReference | None) -> None:
            await self._deliver(target, chunk, reference)

        channel = self._channel(target)
        return PacedStream(
            DiscordStreamSurface(channel, self._reference(target), deliver, NO_PINGS)
        )

    async def download(self, attachment: Attachment, max_bytes: int) -> bytes:
        return await download_attachment(self._client, attachment, max_bytes)

    async def is_admin(self, message: InboundMessage) -> bool:
        if message.is_admin is not None:
            return message.is_admin
        if not message.is_group:
            return True
        channel = (
            self._client.get_channel(int(message.thread_id or message.chat_id))
            if self._client
            else None
        )
        if not isinstance(channel, (discord.abc.GuildChannel, discord.Thread)):
            return False
        guild = channel.guild
        member = guild.get_member(int(message.author_id))
        if member is None:
            try:
                member = await asyncio.wait_for(
                    guild.fetch_member(int(message.author_id)), MEMBER_LOOKUP_TIMEOUT_SECONDS
                )
            except (discord.HTTPException, *TRANSPORT_ERRORS):
                log.warning("discord: member lookup failed (chat=%s)", message.chat_key)
                return False
        return is_admin_permissions(channel.permissions_for(member))

    def typing(self, target: ReplyTarget) -> contextlib.AbstractAsyncContextManager[None]:
        return self._typing(target)

    @contextlib.asynccontextmanager
    async def _typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        # Cosmetic: a failed typing call must never stop the reply.
        indicator = self._channel(target).typing()
        entered = False
        try:
            await asyncio.wait_for(indicator.__aenter__(), SEND_TIMEOUT_SECONDS)
            entered = True
        except (discord.HTTPException, *TRANSPORT_ERRORS):
            log.debug("discord: typing indicator failed (chat=%s)", target.chat_key)
        try:
            yield
        finally:
            if entered:
                with contextlib.suppress(Exception):
                    await indicator.__aexit__(None, None, None)

    # --- delivery -------------------------------------------------------------------------

    def _channel(self, target: ReplyTarget) -> discord.PartialMessageable:
        if self._client is None:
            raise DeliveryError("discord client is not running")
        # A partial channel needs no cache: it works for threads and DMs the cache has dropped.
        return self._client.get_partial_messageable(int(target.thread_id or target.chat_id))

    def _reference(self, target: ReplyTarget) -> discord.MessageReference | None:
        if target.reply_to_message_id is None:
            return None
        return discord.MessageReference(
            message_id=int(target.reply_to_message_id),
            channel_id=int(target.thread_id or target.chat_id),
            fail_if_not_exists=False,  # the question may be deleted; the answer still goes out
        )

    async def _deliver(
        self,
        target: ReplyTarget,
        chunk: str,
        reference: discord.MessageReference | None,
        nonce: str | None = None,
    ) -> None:
        await deliver_chunk(self._channel(target), target.chat_key, chunk, reference, nonce)

    async def _followup(
        self, interaction: discord.Interaction, target: ReplyTarget, chunk: str
    ) -> bool:
        return await followup(interaction, target.chat_key, chunk)


def _report_client_exit(task: asyncio.Task[None]) -> None:
    # discord.py reconnects by itself; its task ending on its own means Discord is gone for good.
    if not task.cancelled() and task.exception() is not None:
        log.error("discord: client stopped: %s", type(task.exception()).__name__)


def platform_from_config(
    config: Config, gateway: MessageGateway, *, role: Role = RUN
) -> DiscordPlatform | None:
    """The `compactbot.platforms` entry point: Discord when a bot token is configured.

    Workers receive Discord (on their shards when given); the Telegram ingress does not.
    """
    if config.discord.token is None or role.name == "ingress":
        return None
    if role.name == "run":
        return DiscordPlatform(config, gateway)
    shards = None
    if role.shard_ids is not None and role.shard_count is not None:
        shards = (role.shard_ids, role.shard_count)
    # Workers are on PostgreSQL (`compactbot worker` checked); their identifies share one pace.
    pacing = IdentifyPacing(config.storage.database)
    return DiscordPlatform(config, gateway, shards=shards, identify_pacing=pacing)

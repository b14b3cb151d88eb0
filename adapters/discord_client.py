"""discord.py's client subclasses: events go to the platform, slash commands to its tree."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

import discord
from discord import app_commands

from compactbot.adapters.discord_changes import on_raw_delete, on_raw_edit

if TYPE_CHECKING:
    from compactbot.bot.services import Services
    from compactbot.bot.workers.identify_pacing import IdentifyPacing

log = logging.getLogger("compactbot.adapters.discord")


class ClientHost(Protocol):
    """What the client needs of its platform (`adapters.discord.DiscordPlatform`)."""

    identify_pacing: IdentifyPacing | None

    @property
    def services(self) -> Services: ...
    async def setup_commands(self, tree: app_commands.CommandTree[Any]) -> None: ...
    def on_message(self, message: discord.Message) -> None: ...
    def after_channel(self, channel_id: str, change: Callable[[], Awaitable[None]]) -> None: ...


class PlatformClient(discord.Client):
    """A discord.Client whose events go to its platform; the tree holds the slash commands."""

    def __init__(self, platform: ClientHost, **options: Any) -> None:
        intents = discord.Intents.default()
        intents.message_content = True  # privileged: enable it in the developer portal
        super().__init__(intents=intents, **options)
        self.platform = platform
        self.tree = app_commands.CommandTree(self)

    async def setup_hook(self) -> None:
        await self.platform.setup_commands(self.tree)

    async def on_ready(self) -> None:
        name = self.user.name if self.user else "?"
        log.info("discord: connected as %s, %d guilds", name, len(self.guilds))

    async def on_message(self, message: discord.Message) -> None:
        self.platform.on_message(message)

    async def on_raw_message_edit(self, payload: discord.RawMessageUpdateEvent) -> None:
        services = self.platform.services
        self.platform.after_channel(
            str(payload.channel_id), lambda: on_raw_edit(self, services, payload)
        )

    async def on_raw_message_delete(self, payload: discord.RawMessageDeleteEvent) -> None:
        services = self.platform.services
        self.platform.after_channel(
            str(payload.channel_id), lambda: on_raw_delete(self, services, payload)
        )

    async def on_raw_bulk_message_delete(self, payload: discord.RawBulkMessageDeleteEvent) -> None:
        services = self.platform.services
        self.platform.after_channel(
            str(payload.channel_id), lambda: on_raw_delete(self, services, payload)
        )


class ShardedClient(PlatformClient, discord.AutoShardedClient):
    """A worker's client: the shards `compactbot worker --shards` assigns it (SPEC 15)."""

    async def before_identify_hook(self, shard_id: int | None, *, initial: bool = False) -> None:
        pacing = self.platform.identify_pacing
        if pacing is None:
            await super().before_identify_hook(shard_id, initial=initial)
            return
        await pacing.before_identify()  # spaced across every worker, the first one too

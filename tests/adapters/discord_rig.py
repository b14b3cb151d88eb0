"""A running Discord adapter for tests: FakeDiscord (+ slash commands), FakeOpenAI, a real App."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from compactbot.adapters.discord import DiscordPlatform
from compactbot.bot.app import App
from compactbot.bot.events import Adapter, InboundMessage
from compactbot.bot.services import Services
from tests.fakes.discord_payloads import EVERYONE_PERMISSIONS, message_payload
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.discord_wire import RestCall, SentDiscordMessage, json_response, read_body
from tests.fakes.openai_server import FakeOpenAI
from tests.harness import endpoint_env, make_config, running_app

WAIT_SECONDS = 5
GUILD_READY_SECONDS = 0.05  # discord.py waits 2 s for more GUILD_CREATEs by default
APPLICATION_COMMAND = 2  # interaction type of a slash command
CHAT_INPUT = 1  # application command type of a slash command
STRING_OPTION, INTEGER_OPTION = 3, 4
ATTACHMENT_LIMIT_BYTES = 8 * 1024 * 1024


class SlashFakeDiscord(FakeDiscord):
    """FakeDiscord plus slash commands: INTERACTION_CREATE, its callback and followup webhook."""

    def __init__(self) -> None:
        super().__init__()
        self.interaction_callbacks: list[RestCall] = []
        self.followups: asyncio.Queue[SentDiscordMessage] = asyncio.Queue()

    async def slash(
        self,
        name: str,
        options: Mapping[str, str | int] | None = None,
        *,
        author_id: int = 1001,
        author_name: str = "alice",
        permissions: int = EVERYONE_PERMISSIONS,
        channel_id: int | None = None,
    ) -> None:
        """A member runs `/name options`; Discord resolved `permissions` for them in the channel."""
        member = self.add_member(author_id, author_name)
        channel = channel_id or self.channel_id
        await self.dispatch(
            "INTERACTION_CREATE",
            {
                "id": str(self.snowflake()),
                "application_id": str(self.bot_id),
                "type": APPLICATION_COMMAND,
                "token": f"interaction-token-{self.snowflake()}",
                "version": 1,
                "guild_id": str(self.guild_id),
                "channel_id": str(channel),
                "channel": {"id": str(channel), "type": 11 if channel == self.thread_id else 0},
                "member": {**member, "permissions": str(permissions)},
                "data": {
                    "id": str(self.snowflake()),
                    "name": name,
                    "type": CHAT_INPUT,
                    "options": [_option(key, value) for key, value in (options or {}).items()],
                },
                "app_permissions": "0",
                "locale": "en-US",
                "guild_locale": "en-US",
                "entitlements": [],
                "authorizing_integration_owners": {"0": str(self.guild_id)},
                "context": 0,
                "attachment_size_limit": ATTACHMENT_LIMIT_BYTES,
            },
        )

    async def _rest(self, request: web.Request) -> web.Response:
        parts = request.match_info["path"].split("/")
        if parts[0] not in ("interactions", "webhooks"):
            return await super()._rest(request)
        # The interaction token authenticates these calls, not the bot token.
        call = RestCall(request.method, "/" + "/".join(parts), await read_body(request))
        self.calls.append(call)
        if parts[0] == "interactions":
            self.interaction_callbacks.append(call)
            return json_response({"interaction": {"id": parts[1], "type": APPLICATION_COMMAND}})
        message_id = self.snowflake()
        self.followups.put_nowait(SentDiscordMessage(self.channel_id, message_id, call.body))
        return json_response(
            message_payload(
                message_id=message_id,
                channel_id=self.channel_id,
                guild_id=self.guild_id,
                author=self.bot_user,
                content=str(call.body.get("content") or ""),
            )
        )


def _option(name: str, value: str | int) -> dict[str, Any]:
    kind = INTEGER_OPTION if isinstance(value, int) else STRING_OPTION
    return {"name": name, "type": kind, "value": value}


@dataclass
class RecordingGateway:
    """The real gateway, plus a queue of each message once `handle` has returned for it."""

    inner: App
    handled: asyncio.Queue[InboundMessage] = field(default_factory=asyncio.Queue)
    # While `hold` is set and not yet fired, messages wait unstored; `holding` fires for each.
    hold: asyncio.Event | None = None
    holding: asyncio.Queue[InboundMessage] = field(default_factory=asyncio.Queue)

    @property
    def services(self) -> Services:
        return self.inner.gateway.services

    async def handle(self, message: InboundMessage, adapter: Adapter) -> None:
        if self.hold is not None:
            self.holding.put_nowait(message)
            await self.hold.wait()
        await self.inner.gateway.handle(message, adapter)
        self.handled.put_nowait(message)


@dataclass
class Rig:
    discord: FakeDiscord
    llm: FakeOpenAI
    app: App
    gateway: RecordingGateway
    platform: DiscordPlatform

    async def next_sent(self) -> SentDiscordMessage:
        return await asyncio.wait_for(self.discord.sent.get(), WAIT_SECONDS)

    async def next_handled(self) -> InboundMessage:
        return await asyncio.wait_for(self.gateway.handled.get(), WAIT_SECONDS)

    async def settle(self) -> None:
        """Every submitted command and answer has finished."""
        await asyncio.wait_for(self.app.gateway.join(), WAIT_SECONDS)


@contextlib.asynccontextmanager
async def discord_rig(
    tmp_path: Path, fake: FakeDiscord, env: Mapping[str, str] | None = None
) -> AsyncIterator[Rig]:
    async with FakeOpenAI() as llm:
        settings = {**endpoint_env(llm.base_url), "DISCORD_BOT_TOKEN": fake.token, **(env or {})}
        config = make_config(tmp_path, settings)
        async with running_app(config) as app:
            gateway = RecordingGateway(app)
            platform = DiscordPlatform(
                config, gateway, client_options={"guild_ready_timeout": GUILD_READY_SECONDS}
            )
            await platform.start()
            try:
                yield Rig(fake, llm, app, gateway, platform)
            finally:
                await platform.stop()
                await platform.stop()  # safe twice

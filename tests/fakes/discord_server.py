"""A fake Discord REST API (/api/v10) and gateway (/gateway, in discord_gateway.py) that
discord.py connects to.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any

import pytest
import yarl
from aiohttp import web

from tests.fakes.discord_gateway import DiscordGateway
from tests.fakes.discord_payloads import (
    EVERYONE_PERMISSIONS,
    MANAGE_GUILD,
    MANAGE_MESSAGES,
    GuildShape,
    Snowflakes,
    member_payload,
    message_payload,
    role_payload,
    text_channel_payload,
    thread_payload,
    user_payload,
)
from tests.fakes.discord_wire import (
    RestCall,
    RestFailure,
    SentDiscordMessage,
    json_response,
    read_body,
)

log = logging.getLogger(__name__)

SHUTDOWN_SECONDS = 0.5  # tests must not wait on a client that never hung up

MODERATOR_PERMISSIONS = MANAGE_GUILD | MANAGE_MESSAGES
_MENTION_RE = re.compile(r"<@!?(\d+)>")


class FakeDiscord(DiscordGateway):
    """`async with FakeDiscord() as fake: fake.install(monkeypatch)` then start a discord.Client."""

    def __init__(
        self,
        token: str = "discord-test-token",
        bot_id: int = 900_000_000_000_000_001,
        guild_id: int = 800_000_000_000_000_001,
        channel_id: int = 700_000_000_000_000_001,
        bot_name: str = "compactbot",
    ) -> None:
        self.token = token
        self.bot_id = bot_id
        self.bot_user = user_payload(bot_id, bot_name, bot=True)
        self.shape = GuildShape(guild_id, channel_id, channel_id + 1, owner_id=bot_id + 10)
        self.moderator_role_id = guild_id + 1  # Manage Server + Manage Messages
        self.snowflake = Snowflakes()
        self.calls: list[RestCall] = []
        # (monotonic time, IDENTIFY payload) per gateway login, for sharding and pacing tests.
        self.identifies: list[tuple[float, dict[str, Any]]] = []
        self.sent: asyncio.Queue[SentDiscordMessage] = asyncio.Queue()
        self.sent_log: list[SentDiscordMessage] = []
        self.edit_log: list[SentDiscordMessage] = []
        self.edit_times: list[float] = []  # time.monotonic() of each edit, for pacing tests
        self.attachments: dict[str, bytes] = {}  # file name -> bytes on the fake CDN
        self.attachment_downloads: list[str] = []
        self.command_syncs: list[tuple[str, Any]] = []
        self.identified = asyncio.Event()
        self.resumed = asyncio.Event()
        self.messages: dict[int, dict[str, Any]] = {}
        self.members: dict[int, dict[str, Any]] = {bot_id: member_payload([], self.bot_user)}
        self.roles = [
            role_payload(guild_id, "@everyone", EVERYONE_PERMISSIONS, 0),
            role_payload(self.moderator_role_id, "Moderators", MODERATOR_PERMISSIONS, 1),
        ]
        self._announced_roles: set[str] = set()
        # The application's flags; 1 << 19 is GATEWAY_MESSAGE_CONTENT_LIMITED (intent enabled).
        self.app_flags = 1 << 19
        self._failures: list[RestFailure] = []
        self._sockets: list[web.WebSocketResponse] = []
        self._seq = 0
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def guild_id(self) -> int:
        return self.shape.guild_id

    @property
    def channel_id(self) -> int:
        return self.shape.channel_id

    @property
    def thread_id(self) -> int:
        """A public thread (type 11) under `channel_id`, sent in GUILD_CREATE."""
        return self.shape.thread_id

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/v10"

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Point discord.py at this fake; monkeypatch restores both class attributes."""
        import discord

        monkeypatch.setattr(discord.http.Route, "BASE", self.api_base)
        monkeypatch.setattr(
            discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(self.gateway_url)
        )

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application()
        app.router.add_get("/gateway", self._gateway)
        app.router.add_route("*", "/api/v10/{path:.*}", self._rest)
        app.router.add_get("/attachments/{name}", self._attachment)
        self._runner = web.AppRunner(app, shutdown_timeout=SHUTDOWN_SECONDS)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for ws in list(self._sockets):
            await ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    # --- test controls -------------------------------------------------------------------

    def fail_next(
        self,
        route_substring: str,
        status: int,
        json_body: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next REST call whose "METHOD /path" contains `route_substring` with this."""
        body = json_body or {"message": f"{status} injected by FakeDiscord", "code": 0}
        self._failures.append(RestFailure(route_substring, status, body, dict(headers or {})))

    def rate_limit_next(self, route_substring: str, retry_after: float = 0.05) -> None:
        """A 429 discord.py retries by itself: JSON retry_after plus the `Via` header it trusts."""
        body = {
            "message": "You are being rate limited.",
            "retry_after": retry_after,
            "global": False,
        }
        headers = {"Via": "1.1 google", "Retry-After": str(retry_after)}
        self.fail_next(route_substring, 429, body, headers)

    def add_member(
        self, user_id: int, name: str, *, bot: bool = False, permissions: int | None = None
    ) -> dict[str, Any]:
        """Register a guild member; `permissions` gives them a role with exactly those bits."""
        roles = [self.role_for_permissions(permissions)] if permissions else []
        member = member_payload(roles, user_payload(user_id, name, bot=bot))
        self.members[user_id] = member
        return member

    def role_for_permissions(self, permissions: int) -> int:
        """The id of a role granting `permissions`, creating it (and telling clients) if new."""
        for role in self.roles:
            if int(role["permissions"]) == permissions and role["name"] != "@everyone":
                return int(role["id"])
        role = role_payload(self.snowflake(), f"perms-{permissions}", permissions, len(self.roles))
        self.roles.append(role)  # announced to clients before the next send_message
        return int(role["id"])

    async def send_message(
        self,
        content: str,
        *,
        author_id: int = 1001,
        author_name: str = "alice",
        bot: bool = False,
        mention_bot: bool = False,
        channel_id: int | None = None,
        reply_to_message_id: int | None = None,
        member_permissions: int | None = None,
        files: dict[str, tuple[str, bytes]] | None = None,
    ) -> dict[str, Any]:
        """Dispatch a MESSAGE_CREATE from a user; returns the payload (its "id" is a string).
        `files` maps file names to (content type, bytes), served here as the attachments' CDN."""
        if not self._sockets:
            raise RuntimeError("no discord.py client is connected to FakeDiscord")
        if mention_bot and f"<@{self.bot_id}>" not in content:
            content = f"<@{self.bot_id}> {content}"
        member = self.add_member(author_id, author_name, bot=bot, permissions=member_permissions)
        author = member["user"]
        referenced = self.messages.get(reply_to_message_id) if reply_to_message_id else None
        if reply_to_message_id and referenced is None:
            raise KeyError(f"message {reply_to_message_id} unknown to FakeDiscord")
        message = message_payload(
            message_id=self.snowflake(),
            channel_id=channel_id or self.channel_id,
            guild_id=self.guild_id,
            author=author,
            content=content,
            member={k: v for k, v in member.items() if k != "user"},
            mentions=self._mentions_in(content),
            referenced=referenced,
        )
        for name, (content_type, data) in (files or {}).items():
            self.attachments[name] = data
            message["attachments"].append(
                {
                    "id": str(self.snowflake()),
                    "filename": name,
                    "content_type": content_type,
                    "size": len(data),
                    "url": f"http://127.0.0.1:{self.port}/attachments/{name}",
                    "proxy_url": f"http://127.0.0.1:{self.port}/attachments/{name}",
                }
            )
        self.messages[int(message["id"])] = message
        await self._announce_new_roles()
        await self.dispatch("MESSAGE_CREATE", message)
        return message

    def calls_to(self, route_substring: str) -> list[RestCall]:
        return [c for c in self.calls if route_substring in f"{c.method} {c.path}"]

    def _mentions_in(self, content: str) -> list[dict[str, Any]]:
        mentions = []
        for user_id in dict.fromkeys(int(m) for m in _MENTION_RE.findall(content)):
            if member := self.members.get(user_id):
                user = dict(member["user"])
                user["member"] = {k: v for k, v in member.items() if k != "user"}
                mentions.append(user)
        return mentions

    # --- REST ----------------------------------------------------------------------------

    async def _attachment(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.attachment_downloads.append(name)
        data = self.attachments.get(name)
        if data is None:
            return web.Response(status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def _rest(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["path"]
        body = await read_body(request)
        self.calls.append(RestCall(request.method, path, body))
        if request.headers.get("Authorization") != f"Bot {self.token}":
            return json_response({"message": "401: Unauthorized", "code": 0}, 401)
        route = f"{request.method} {path}"
        for failure in self._failures:
            if failure.route_substring in route:
                self._failures.remove(failure)
                return json_response(failure.body, failure.status, failure.headers)
        return await self._route(request.method, path.split("/")[1:], body)

    async def _route(self, method: str, parts: list[str], body: Any) -> web.Response:
        match method, parts:
            case "GET", ["users", "@me"]:
                return json_response(self.bot_user)
            case "GET", ["oauth2", "applications", "@me"]:
                return json_response(self._app_info())
            case "POST", ["channels", channel, "messages"]:
                return json_response(self._record_sent(int(channel), body, self.sent_log))
            case "PATCH", ["channels", channel, "messages", message_id]:
                return json_response(self._record_edit(int(channel), int(message_id), body))
            case "POST", ["channels", _, "typing"]:
                return web.Response(status=204)
            case ("PUT", ["applications", _, "commands"]) | (
                "PUT",
                ["applications", _, "guilds", _, "commands"],
            ):
                self.command_syncs.append(("/".join(parts), body))
                return json_response([])
            case "GET", ["channels", channel]:
                return self._channel(int(channel))
            case "GET", ["guilds", _, "members", user]:
                member = self.members.get(int(user))
                if member is None:
                    return json_response({"message": "Unknown Member", "code": 10007}, 404)
                return json_response(member)
        log.warning("FakeDiscord: no route for %s /%s", method, "/".join(parts))
        return json_response({"message": "404: Not Found", "code": 0}, 404)

    def _record_sent(
        self, channel_id: int, body: dict[str, Any], log_list: list[SentDiscordMessage]
    ) -> dict[str, Any]:
        message_id = self.snowflake()
        sent = SentDiscordMessage(channel_id, message_id, body)
        log_list.append(sent)
        self.sent.put_nowait(sent)
        referenced = None
        if ref := body.get("message_reference"):
            # discord.py sends message_reference.message_id as an int; payloads use strings.
            referenced = self.messages.get(int(ref["message_id"]))
        message = message_payload(
            message_id=message_id,
            channel_id=channel_id,
            guild_id=self.guild_id,
            author=self.bot_user,
            content=str(body.get("content") or ""),
            referenced=referenced,
        )
        self.messages[message_id] = message
        return message

    def _record_edit(
        self, channel_id: int, message_id: int, body: dict[str, Any]
    ) -> dict[str, Any]:
        self.edit_log.append(SentDiscordMessage(channel_id, message_id, body))
        self.edit_times.append(time.monotonic())
        message = dict(self.messages.get(message_id) or {})
        if not message:
            message = message_payload(
                message_id=message_id,
                channel_id=channel_id,
                guild_id=self.guild_id,
                author=self.bot_user,
                content="",
            )
        message["content"] = str(body.get("content") or message["content"])
        message["edited_timestamp"] = message["timestamp"]
        self.messages[message_id] = message
        return message

    def _channel(self, channel_id: int) -> web.Response:
        if channel_id == self.channel_id:
            return json_response(text_channel_payload(self.shape, channel_id, "general"))
        if channel_id == self.thread_id:
            return json_response(
                thread_payload(self.shape, channel_id, self.channel_id, "a thread")
            )
        return json_response({"message": "Unknown Channel", "code": 10003}, 404)

    def _app_info(self) -> dict[str, Any]:
        owner = user_payload(self.shape.owner_id, "owner")
        return {
            "id": str(self.bot_id),
            "name": self.bot_user["username"],
            "description": "",
            "icon": None,
            "bot_public": True,
            "bot_require_code_grant": False,
            "owner": owner,
            "verify_key": "0" * 64,
            "flags": self.app_flags,
        }

"""The fake Discord gateway (/gateway): HELLO, IDENTIFY and RESUME, READY with GUILD_CREATE,
and dispatches to every connected discord.py client.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from aiohttp import WSMsgType, web

from tests.fakes.discord_payloads import (
    GuildShape,
    guild_payload,
    text_channel_payload,
    thread_payload,
)

HEARTBEAT_INTERVAL_MS = 41_250  # what Discord really sends; discord.py beats once at connect
AUTH_FAILED_CLOSE_CODE = 4004  # gateway close code for a bad token
RESUMABLE_CLOSE_CODE = 4000  # "unknown error": discord.py reconnects and resumes its session
OP_DISPATCH, OP_HEARTBEAT, OP_IDENTIFY, OP_RESUME, OP_HELLO, OP_HEARTBEAT_ACK = 0, 1, 2, 6, 10, 11


class DiscordGateway:
    """Mixed into FakeDiscord (which holds the guild): `identifies` records every IDENTIFY,
    `identified` and `resumed` are set once READY and RESUMED went out."""

    token: str
    bot_id: int
    bot_user: dict[str, Any]
    shape: GuildShape
    port: int
    roles: list[dict[str, Any]]
    members: dict[int, dict[str, Any]]
    identifies: list[tuple[float, dict[str, Any]]]
    identified: asyncio.Event
    resumed: asyncio.Event
    _announced_roles: set[str]
    _sockets: list[web.WebSocketResponse]
    _seq: int

    @property
    def gateway_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}/gateway"

    async def dispatch(self, event: str, data: dict[str, Any]) -> None:
        """Send a gateway DISPATCH (THREAD_CREATE, GUILD_ROLE_CREATE, ...) to every client."""
        for ws in list(self._sockets):
            self._seq += 1
            await ws.send_json({"op": OP_DISPATCH, "t": event, "s": self._seq, "d": data})

    async def drop_gateway(self, code: int = RESUMABLE_CLOSE_CODE) -> None:
        """Close every gateway socket; discord.py reconnects and sends RESUME."""
        self.resumed.clear()
        for ws in list(self._sockets):
            self._sockets.remove(ws)
            await ws.close(code=code, message=b"dropped by FakeDiscord")

    async def _announce_new_roles(self) -> None:
        # A role created after GUILD_CREATE must reach the client before a message that uses it,
        # or discord.py computes the member's permissions without it.
        for role in self.roles:
            if role["id"] not in self._announced_roles:
                self._announced_roles.add(role["id"])
                await self.dispatch(
                    "GUILD_ROLE_CREATE", {"guild_id": str(self.shape.guild_id), "role": role}
                )

    async def _gateway(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"op": OP_HELLO, "d": {"heartbeat_interval": HEARTBEAT_INTERVAL_MS}})
        async for frame in ws:
            if frame.type != WSMsgType.TEXT:
                continue
            payload = json.loads(frame.data)
            op = payload.get("op")
            if op == OP_HEARTBEAT:
                await ws.send_json({"op": OP_HEARTBEAT_ACK})
            elif op == OP_IDENTIFY:
                self.identifies.append((time.monotonic(), dict(payload["d"])))
                if payload["d"].get("token") != self.token:
                    await ws.close(code=AUTH_FAILED_CLOSE_CODE, message=b"Authentication failed.")
                    break
                self._sockets.append(ws)
                await self._ready(ws, payload["d"].get("shard"))
            elif op == OP_RESUME:
                self._sockets.append(ws)
                self._seq += 1
                await ws.send_json({"op": OP_DISPATCH, "t": "RESUMED", "s": self._seq, "d": {}})
                self.resumed.set()
        if ws in self._sockets:
            self._sockets.remove(ws)
        return ws

    async def _ready(self, ws: web.WebSocketResponse, shard: list[int] | None = None) -> None:
        ready = {
            **({"shard": shard} if shard else {}),
            "v": 10,
            "user": self.bot_user,
            "session_id": "fake-session",
            "resume_gateway_url": self.gateway_url,
            "guilds": [{"id": str(self.shape.guild_id), "unavailable": True}],
            "application": {"id": str(self.bot_id), "flags": 0},
        }
        shape = self.shape
        guild = guild_payload(
            shape,
            roles=self.roles,
            members=list(self.members.values()),
            channels=[text_channel_payload(shape, shape.channel_id, "general")],
            threads=[thread_payload(shape, shape.thread_id, shape.channel_id, "a thread")],
        )
        self._announced_roles.update(role["id"] for role in self.roles)
        for event, data in (("READY", ready), ("GUILD_CREATE", guild)):
            self._seq += 1
            await ws.send_json({"op": OP_DISPATCH, "t": event, "s": self._seq, "d": data})
        self.identified.set()

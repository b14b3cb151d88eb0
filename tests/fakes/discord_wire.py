"""Discord REST wire details for FakeDiscord: recorded calls, exact JSON responses, bodies."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass(frozen=True, slots=True)
class SentDiscordMessage:
    """A message body discord.py POSTed (or PATCHed), exactly as it sent it."""

    channel_id: int
    message_id: int
    body: dict[str, Any]

    @property
    def content(self) -> str:
        return str(self.body.get("content") or "")

    @property
    def allowed_mentions(self) -> dict[str, Any] | None:
        return self.body.get("allowed_mentions")

    @property
    def message_reference(self) -> dict[str, Any] | None:
        return self.body.get("message_reference")


@dataclass(frozen=True, slots=True)
class RestCall:
    method: str
    path: str
    body: Any


@dataclass(frozen=True, slots=True)
class RestFailure:
    route_substring: str
    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> web.Response:
    # discord.py compares Content-Type with == "application/json"; "; charset=utf-8" breaks it.
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return web.Response(body=json.dumps(data).encode(), status=status, headers=all_headers)


async def read_body(request: web.Request) -> Any:
    if not request.can_read_body:
        return None
    if request.content_type == "application/json":
        return await request.json()
    if request.content_type.startswith("multipart/"):
        form = await request.post()
        payload = form.get("payload_json")
        return json.loads(payload) if isinstance(payload, str) else {}
    return await request.text()

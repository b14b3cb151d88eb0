"""Our own webhook endpoint: secret and size checked before the body is read, 200 after storing.

python-telegram-bot's webhook server (tornado) buffers bodies of up to about 100 MB before it
looks at the secret header. Here, in order: the path and method, the secret (403), the declared
size (413), then a bounded read, JSON (400 when malformed), and the ingest; only a stored (or
dead-lettered) update gets its 200, so Telegram redelivers anything we failed to keep.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from compactbot.adapters.telegram_ingest import IngestError, excerpt

log = logging.getLogger(__name__)

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
# Telegram's updates are a few KB; a media group with long captions stays far below this.
MAX_BODY_BYTES = 2 * 1024 * 1024
# In-flight requests get this long to finish storing when the server stops.
SHUTDOWN_SECONDS = 5.0
# After refusing a body, read and drop what the client sends for this long before closing:
# closing on unread data sends a reset, and a reset discards the refusal from the client's
# receive buffer before it could read it. Short, so a client that never stops costs 0.1 s.
LINGER_SECONDS = 0.1

Ingest = Callable[[Any], Awaitable[None]]


class WebhookServer:
    """`await start()` listens on host:port and serves POST `path`; `await stop()` drains."""

    def __init__(self, host: str, port: int, path: str, secret: str, ingest: Ingest) -> None:
        if not secret:
            raise ValueError("the webhook needs a secret token")
        self._host = host
        self._port = port
        self._path = "/" + path.lstrip("/")
        self._secret = secret.encode()
        self._ingest = ingest
        self._runner: web.AppRunner | None = None

    @property
    def running(self) -> bool:
        return self._runner is not None

    async def start(self) -> None:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app.router.add_post(self._path, self._receive)
        # aiohttp's default lingering (10 s) would read a fast client's 90 MB refusal to its end.
        runner = web.AppRunner(
            app, access_log=None, shutdown_timeout=SHUTDOWN_SECONDS, lingering_time=LINGER_SECONDS
        )
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port).start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner

    async def stop(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def _receive(self, request: web.Request) -> web.Response:
        given = request.headers.get(SECRET_HEADER, "").encode()
        if not hmac.compare_digest(given, self._secret):
            return _refuse(403, "forbidden")
        declared = request.content_length
        if declared is not None and declared > MAX_BODY_BYTES:
            return _refuse(413, "body too large")
        try:
            body = await request.read()  # client_max_size bounds a body without a length
        except web.HTTPRequestEntityTooLarge:
            return _refuse(413, "body too large")
        try:
            raw = json.loads(body)
        except (ValueError, UnicodeDecodeError):
            log.warning(
                "telegram webhook: malformed JSON (%d bytes): %s",
                len(body),
                excerpt(body[:400].decode("utf-8", "replace")),
            )
            return _refuse(400, "malformed JSON")
        try:
            await self._ingest(raw)
        except IngestError:
            log.error("telegram webhook: update not stored; Telegram will redeliver it")
            return web.Response(status=500, text="not stored")
        return web.Response(text="ok")


def _refuse(status: int, reason: str) -> web.Response:
    # Closing the connection spares reading (and discarding) whatever body is still coming.
    return web.Response(status=status, text=reason, headers={"Connection": "close"})

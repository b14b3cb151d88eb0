"""A fake OpenAI-compatible HTTP server on 127.0.0.1 for tests that drive the real `openai` client.

    async with FakeOpenAI() as fake:
        fake.script(Error.insufficient_quota(), Reply("summary"))
        client = AsyncOpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)

Scripted behaviours are served in order; when the queue is empty `responder(body)` decides
(by default a deterministic reply whose prompt_tokens are counted from the request).
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from compactbot.compression.tokens import counter_for

DEFAULT_CONTEXT_LENGTH = 128_000
DEFAULT_MODELS = ("fake-model",)


@dataclass(frozen=True, slots=True)
class Reply:
    """A chat completion; prompt_tokens None means "count the request"."""

    text: str | None = "ok"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tool_calls: Sequence[Mapping[str, Any]] | None = None
    delay: float = 0.0
    finish_reason: str | None = None
    reasoning_content: str | None = None
    # Streaming only: content in pieces of this many characters (0: one piece), this long apart,
    # and, with break_after, the connection dropped after that many pieces (no usage, no [DONE]).
    chunk_chars: int = 0
    chunk_delay: float = 0.0
    break_after: int | None = None


@dataclass(frozen=True, slots=True)
class Error:
    """An HTTP error; a dict/list body is sent as JSON, a str as text/html."""

    status: int
    body: Any = None
    headers: Mapping[str, str] | None = None

    @classmethod
    def openai(cls, status: int, code: str | None, message: str, kind: str = "") -> Error:
        error = {"message": message, "type": kind or "invalid_request_error", "param": None}
        return cls(status, {"error": {**error, "code": code}})

    @classmethod
    def context_length_exceeded(cls) -> Error:
        return cls.openai(
            400,
            "context_length_exceeded",
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130000 tokens. Please reduce the length of the messages.",
        )

    @classmethod
    def html_413(cls) -> Error:
        return cls(413, "<html><body><h1>413 Request Entity Too Large</h1>nginx</body></html>")

    @classmethod
    def unauthorized(cls) -> Error:
        return cls.openai(401, "invalid_api_key", "Incorrect API key provided.")

    @classmethod
    def insufficient_quota(cls) -> Error:
        return cls.openai(
            429,
            "insufficient_quota",
            "You exceeded your current quota, please check your plan and billing details.",
            "insufficient_quota",
        )

    @classmethod
    def rate_limited(cls, retry_after_ms: int = 100) -> Error:
        error = cls.openai(429, "rate_limit_exceeded", "Rate limit reached.", "requests")
        return cls(429, error.body, {"retry-after-ms": str(retry_after_ms)})

    @classmethod
    def server_error(cls) -> Error:
        return cls.openai(500, None, "The server had an error.", "server_error")


@dataclass(frozen=True, slots=True)
class Hang:
    """Hold the request open (for client timeouts); released early when the fake closes."""

    seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class Malformed:
    """200 with a body that is not JSON."""

    body: str = "<html>upstream returned garbage</html>"
    content_type: str = "application/json"


@dataclass(frozen=True, slots=True)
class Empty:
    """200 with empty content; `no_choices` sends an empty choices list instead."""

    no_choices: bool = False


Behaviour = Reply | Error | Hang | Malformed | Empty
Responder = Callable[[dict[str, Any]], Behaviour]


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None = field(default=None)


def default_responder(body: dict[str, Any]) -> Behaviour:
    """A deterministic reply naming how many messages it got."""
    messages = body.get("messages") or []
    return Reply(f"fake reply to {len(messages)} messages")


def count_prompt_tokens(body: Mapping[str, Any]) -> int:
    """Prompt tokens of a request body as compression.tokens counts them."""
    counter = counter_for(body.get("model") if isinstance(body.get("model"), str) else None)
    total = counter.count_messages(body.get("messages") or [])
    return total + counter.count_tools(body.get("tools") or [])


def unused_port() -> int:
    """A port nothing listens on (for connection-refused tests)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class FakeOpenAI:
    """Async context manager serving /v1/chat/completions and /v1/models on 127.0.0.1."""

    def __init__(
        self,
        responder: Responder = default_responder,
        *,
        context_length: int = DEFAULT_CONTEXT_LENGTH,
        models: Sequence[str] = DEFAULT_MODELS,
        api_key: str | None = None,
    ) -> None:
        self.responder = responder
        # Set: every request without `Authorization: Bearer <api_key>` gets a 401, as OpenAI's.
        self.api_key = api_key
        self.context_length = context_length
        self.models = tuple(models)
        self.requests: list[RecordedRequest] = []
        self._queue: deque[Behaviour] = deque()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self._port = 0
        self._ids = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def completions(self) -> list[dict[str, Any]]:
        """JSON bodies of the chat completion requests, in order."""
        return [r.body or {} for r in self.requests if r.path.endswith("/chat/completions")]

    def script(self, *behaviours: Behaviour) -> None:
        self._queue.extend(behaviours)

    async def __aenter__(self) -> FakeOpenAI:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/v1/models/{model}", self._model)
        # A short shutdown timeout: a Hang must not hold up the test's teardown.
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def _record(self, request: web.Request) -> dict[str, Any] | None:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {key.lower(): value for key, value in request.headers.items()}
        self.requests.append(RecordedRequest(request.method, request.path, headers, body))
        return body if isinstance(body, dict) else None

    def _refused(self, request: web.Request) -> web.Response | None:
        if self.api_key is None or request.headers.get("Authorization") == f"Bearer {self.api_key}":
            return None
        return _error_response(Error.unauthorized())

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request) or {}
        if refused := self._refused(request):
            return refused
        behaviour = self._queue.popleft() if self._queue else self.responder(body)
        if isinstance(behaviour, Hang):
            try:
                await asyncio.wait_for(self._closing.wait(), behaviour.seconds)
            except TimeoutError:
                pass
            return web.json_response(self._completion(body, Reply("late reply")))
        if isinstance(behaviour, Error):
            return _error_response(behaviour)
        if isinstance(behaviour, Malformed):
            return web.Response(
                text=behaviour.body, status=200, content_type=behaviour.content_type
            )
        if isinstance(behaviour, Empty):
            payload = self._completion(body, Reply(""))
            if behaviour.no_choices:
                payload["choices"] = []
            return web.json_response(payload)
        if behaviour.delay:
            await asyncio.sleep(behaviour.delay)
        if body.get("stream"):
            return await self._stream(request, body, behaviour)
        return web.json_response(self._completion(body, behaviour))

    def _completion(self, body: Mapping[str, Any], reply: Reply) -> dict[str, Any]:
        self._ids += 1
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.reasoning_content is not None:
            message["reasoning_content"] = reply.reasoning_content
        calls = _tool_calls(reply.tool_calls, self._ids)
        if calls:
            message["tool_calls"] = calls
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        return {
            "id": f"chatcmpl-fake-{self._ids}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.models[0],
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": self._usage(body, reply),
        }

    def _usage(self, body: Mapping[str, Any], reply: Reply) -> dict[str, int]:
        prompt = reply.prompt_tokens
        if prompt is None:
            prompt = count_prompt_tokens(body)
        completion = reply.completion_tokens
        if completion is None:
            completion = counter_for(None).count_text(reply.text or "")
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    async def _stream(
        self, request: web.Request, body: Mapping[str, Any], reply: Reply
    ) -> web.StreamResponse:
        """Server-sent events: one content chunk, a finish chunk, optional usage, [DONE]."""
        full = self._completion(body, reply)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        base = {k: full[k] for k in ("id", "created", "model")} | {
            "object": "chat.completion.chunk"
        }
        message = full["choices"][0]["message"]
        content = message["content"]
        size = reply.chunk_chars or max(len(content or ""), 1)
        pieces = [content[i : i + size] for i in range(0, len(content), size)] if content else []
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": p} for p in pieces]
        if not deltas or "tool_calls" in message:
            deltas.append({"role": "assistant", "content": None if pieces else content})
        if "tool_calls" in message:
            deltas[-1]["tool_calls"] = [
                {"index": i, **c} for i, c in enumerate(message["tool_calls"])
            ]
        finish = full["choices"][0]["finish_reason"]
        chunks = [
            {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
        ]
        if reply.break_after is not None:
            for chunk in chunks[: reply.break_after]:
                await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
                await asyncio.sleep(reply.chunk_delay)
            # Drop the connection mid-stream, as a crashed upstream or proxy would.
            assert request.transport is not None
            request.transport.abort()
            return response
        chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append({**base, "choices": [], "usage": full["usage"]})
        for index, chunk in enumerate(chunks):
            if index and reply.chunk_delay and index < len(deltas):
                await asyncio.sleep(reply.chunk_delay)
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request)
        if refused := self._refused(request):
            return refused
        return web.json_response(
            {"object": "list", "data": [self._model_card(m) for m in self.models]}
        )

    async def _model(self, request: web.Request) -> web.Response:
        await self._record(request)
        name = request.match_info["model"]
        if name not in self.models:
            return _error_response(Error.openai(404, "model_not_found", f"no model {name}"))
        return web.json_response(self._model_card(name))

    def _model_card(self, name: str) -> dict[str, Any]:
        return {
            "id": name,
            "object": "model",
            "created": 0,
            "owned_by": "fake",
            "context_length": self.context_length,
        }


def _tool_calls(calls: Sequence[Mapping[str, Any]] | None, salt: int) -> list[dict[str, Any]]:
    """Accepts {"name", "arguments"} shorthands or full OpenAI tool calls."""
    normalized: list[dict[str, Any]] = []
    for index, call in enumerate(calls or ()):
        function = call.get("function", call)
        arguments = function.get("arguments", {})
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        normalized.append(
            {
                "id": call.get("id") or f"call_{salt}_{index}",
                "type": "function",
                "function": {"name": function["name"], "arguments": arguments},
            }
        )
    return normalized


def _error_response(error: Error) -> web.Response:
    headers = dict(error.headers or {})
    if isinstance(error.body, dict | list):
        return web.json_response(error.body, status=error.status, headers=headers)
    text = "" if error.body is None else str(error.body)
    return web.Response(text=text, status=error.status, content_type="text/html", headers=headers)

"""The LLM client seam: response values, the client protocol and the OpenAI client."""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import openai

from compactbot.bot.llm.errors import (
    LLMError,
    LLMRateLimitError,
    LLMTimeoutError,
    LLMTransientError,
    classify_error,
)

log = logging.getLogger(__name__)

# Backoff for 5xx/connection errors: 0.5 s, 1 s, 2 s ... times a 0.75-1.0 jitter, as the SDK does.
RETRY_BASE_SECONDS = 0.5
RETRY_MAX_BACKOFF_SECONDS = 8.0
# A server's retry-after is honoured up to this; a turn should not stall longer on one call.
RETRY_AFTER_CAP_SECONDS = 30.0
MODELS_TIMEOUT_SECONDS = 10.0
# One reply call, every retry included, ends by then: the chat hears something within it.
DEFAULT_DEADLINE_SECONDS = 30.0
# Anthropic allows four cache breakpoints per request: the system prompt plus the last three.
CACHE_TAIL_BREAKPOINTS = 3
CACHE_CONTROL = {"type": "ephemeral"}
# Local servers (Ollama, vLLM, llama.cpp) need no key, but the SDK refuses to start without one.
NO_API_KEY = "no-key"


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text exactly as the model produced it; may be invalid


@dataclass(frozen=True, slots=True)
class LLMResponse:
    content: str | None
    tool_calls: tuple[ToolCall, ...]
    prompt_tokens: int
    completion_tokens: int
    model: str

    def as_message(self) -> dict[str, Any]:
        """The OpenAI assistant message to store and replay."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return message


class LLMClient(Protocol):
    model: str
    offline: bool

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse: ...


def backoff_seconds(attempt: int, base: float = RETRY_BASE_SECONDS) -> float:
    """Exponential backoff with jitter for retry number `attempt` (0-based)."""
    delay = min(base * 2**attempt, RETRY_MAX_BACKOFF_SECONDS)
    return delay * random.uniform(0.75, 1.0)


def with_cache_breakpoints(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Copies of `messages` with Anthropic cache marks on the system prompt and the last three."""
    out = [dict(m) for m in messages]
    system = next((i for i, m in enumerate(out) if m.get("role") == "system"), None)
    tail = [i for i, m in enumerate(out) if m.get("role") != "system" and _can_mark(m)]
    for index in ([system] if system is not None else []) + tail[-CACHE_TAIL_BREAKPOINTS:]:
        out[index]["content"] = _marked_content(out[index]["content"])
    return out


def _can_mark(message: Mapping[str, Any]) -> bool:
    # An empty tool-call stub has no text part to carry a mark; skip it so no breakpoint is lost.
    content = message.get("content")
    if isinstance(content, str):
        return bool(content)
    return isinstance(content, list) and any(isinstance(p, Mapping) for p in content)


def _marked_content(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content, "cache_control": dict(CACHE_CONTROL)}]
    parts = [dict(p) if isinstance(p, Mapping) else p for p in content]
    last = max(i for i, p in enumerate(parts) if isinstance(p, dict))
    parts[last]["cache_control"] = dict(CACHE_CONTROL)
    return parts


def _parse_completion(completion: Any, model: str) -> LLMResponse:
    choices = getattr(completion, "choices", None)
    if not choices:
        # A non-JSON body comes back from the SDK as plain text, with no choices at all.
        raise LLMTransientError("malformed response: no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise LLMTransientError("malformed response: no message")
    calls = []
    for raw in getattr(message, "tool_calls", None) or ():
        function = getattr(raw, "function", None)
        if function is None:  # custom (non-function) tools are not offered, so not expected
            continue
        calls.append(ToolCall(id=raw.id, name=function.name, arguments=function.arguments or ""))
    usage = getattr(completion, "usage", None)
    return LLMResponse(
        content=getattr(message, "content", None),
        tool_calls=tuple(calls),
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        model=str(getattr(completion, "model", None) or model),
    )


def context_length_of(entry: Mapping[str, Any]) -> int | None:
    """A model-list entry's window: OpenRouter's `context_length` or vLLM's `max_model_len`."""
    for key in ("context_length", "max_model_len"):
        value = entry.get(key)
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            continue
        try:
            length = int(value)
        except ValueError:
            continue
        if length > 0:
            return length
    return None


class OpenAIChatClient:
    """Chat completions over any OpenAI-compatible endpoint, with our own retry policy."""

    offline = False

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None,
        model: str,
        timeout_seconds: float = 60,
        max_retries: int = 2,
        client: openai.AsyncOpenAI | None = None,
        retry_base_seconds: float = RETRY_BASE_SECONDS,
        deadline_seconds: float = DEFAULT_DEADLINE_SECONDS,
    ) -> None:
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        if deadline_seconds <= 0:
            raise ValueError(f"deadline_seconds must be positive, got {deadline_seconds}")
        self.model = model
        self.deadline_seconds = deadline_seconds
        self.max_retries = max_retries
        self._retry_base_seconds = retry_base_seconds
        # The SDK's retries are off: it would retry insufficient_quota and ignore our cap.
        self._client = (
            client or openai.AsyncOpenAI(api_key=api_key or NO_API_KEY, base_url=base_url)
        ).with_options(timeout=timeout_seconds, max_retries=0)
        self._owned = client is None

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        request = self._request(messages, tools, model)
        return await self._with_retries(request, self._complete_once)

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, model: str | None
    ) -> dict[str, Any]:
        name = model or self.model
        request: dict[str, Any] = {
            "model": name,
            "messages": with_cache_breakpoints(messages) if "claude" in name.lower() else messages,
        }
        if tools:
            request["tools"] = tools
        return request

    async def _complete_once(
        self, request: dict[str, Any], _answering: Callable[[], None]
    ) -> LLMResponse:
        completion = await self._client.chat.completions.create(**request)
        return _parse_completion(completion, request["model"])

    async def _with_retries(
        self,
        request: dict[str, Any],
        once: Callable[[dict[str, Any], Callable[[], None]], Awaitable[LLMResponse]],
    ) -> LLMResponse:
        """`once(request, answering)` under our retry policy and deadline; `once` calls
        `answering()` when output starts to arrive (the streaming client reuses this)."""
        name = request["model"]
        attempt = 0
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.deadline_seconds
        while True:
            try:
                # The deadline bounds the wait for an answer to start; a stream that is
                # already showing text runs on (the client's read timeout still applies).
                async with asyncio.timeout_at(deadline) as window:
                    return await once(request, lambda: window.reschedule(None))
            except (
                openai.OpenAIError,
                json.JSONDecodeError,
                LLMTransientError,
                TimeoutError,
            ) as exc:
                error = classify_error(exc)
                delay = self._retry_delay(error, attempt)
                if delay is not None and loop.time() + delay >= deadline:
                    delay = None  # a retry could not finish before the deadline
                log.log(
                    logging.WARNING if delay is None else logging.INFO,
                    "llm call failed: model=%s status=%s error=%s attempt=%d retry_in=%s",
                    name,
                    error.status,
                    type(error).__name__,
                    attempt + 1,
                    "never" if delay is None else f"{delay:.2f}s",
                )
                if delay is None:
                    raise error from exc
                attempt += 1
                await asyncio.sleep(delay)

    def _retry_delay(self, error: LLMError, attempt: int) -> float | None:
        """Seconds to wait before retrying, or None when `error` must be raised."""
        if attempt >= self.max_retries or isinstance(error, LLMTimeoutError):
            return None
        if isinstance(error, LLMRateLimitError) and error.retry_after_seconds is not None:
            return min(error.retry_after_seconds, RETRY_AFTER_CAP_SECONDS)
        if isinstance(error, LLMRateLimitError | LLMTransientError):
            return backoff_seconds(attempt, self._retry_base_seconds)
        return None

    async def fetch_context_length(self, model: str | None = None) -> int | None:
        """A model's window (default: ours) as the endpoint's model list reports it, or None."""
        wanted = model or self.model
        try:
            page = await self._client.with_options(timeout=MODELS_TIMEOUT_SECONDS).models.list()
            entries = [item.to_dict() for item in page.data]
        except Exception as exc:  # fail-open: the caller falls back to a default window
            log.info("model list unavailable: model=%s error=%s", self.model, type(exc).__name__)
            return None
        lengths = (context_length_of(e) for e in entries if e.get("id") == wanted)
        return next((n for n in lengths if n is not None), None)

    async def aclose(self) -> None:
        if self._owned:
            await self._client.close()

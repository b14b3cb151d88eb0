"""The LLM client seam: response values, the error tree, the classifier and the OpenAI client."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import openai

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

# Lower-cased fragments with which providers say the prompt does not fit (hermes-study 2.6):
# OpenAI, Anthropic, vLLM (max_model_len), llama.cpp (n_ctx), Ollama, Gemini and proxies.
OVERFLOW_PATTERNS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context window",
    "context size",
    "prompt is too long",
    "max_model_len",
    "n_ctx",
    "reduce the length",
    "too many tokens",
    "input is too long",
    "maximum number of tokens",
    "exceeds the maximum number of input tokens",
    "request entity too large",
    "payload too large",
)
# Request-validation 400s that merely mention token parameters; compressing would not help.
VALIDATION_PATTERNS = (
    "unsupported parameter",
    "unsupported value",
    "unrecognized request argument",
)
# OpenAI's tokens-per-minute 429 for a single request bigger than the limit: only a smaller
# prompt can ever pass.
TOO_LARGE_429_PATTERNS = ("request too large",)


class LLMError(Exception):
    """Root of LLM call failures; carries the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None):
        super().__init__(message)
        self.status = status
        self.code = code


class ContextOverflowError(LLMError):
    """The request does not fit the model's window: compress and retry."""


class LLMAuthError(LLMError):
    """Bad key, no permission or exhausted quota: retrying cannot help."""


class LLMRateLimitError(LLMError):
    """Too many requests; `retry_after_seconds` is the server's hint when it gave one."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = 429,
        code: str | None = None,
        retry_after_seconds: float | None = None,
    ):
        super().__init__(message, status=status, code=code)
        self.retry_after_seconds = retry_after_seconds


class LLMTransientError(LLMError):
    """Timeout, connection failure, 5xx or a malformed response: worth another try later."""


class LLMTimeoutError(LLMTransientError):
    """No answer within the deadline: a hung endpoint, never retried (a retry would hang too)."""


class LLMFatalError(LLMError):
    """Any other rejection of the request (4xx): retrying the same request cannot help."""


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


def classify_error(exc: BaseException) -> LLMError:
    """Map any exception from a completion call onto the LLMError tree."""
    if isinstance(exc, LLMError):
        return exc
    if isinstance(exc, openai.APITimeoutError | TimeoutError):
        return LLMTimeoutError("request timed out")
    if isinstance(exc, openai.APIConnectionError):
        return LLMTransientError("connection error")
    if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError):
        return LLMTransientError("malformed response")
    if isinstance(exc, openai.APIStatusError):
        return _classify_status(exc)
    return LLMFatalError(f"unexpected {type(exc).__name__}")


def _classify_status(exc: openai.APIStatusError) -> LLMError:
    status, code = exc.status_code, exc.code
    text = _error_text(exc)
    summary = f"HTTP {status}" + (f" ({code})" if code else "")
    if status == 413:
        return ContextOverflowError(f"{summary}: request too large", status=status, code=code)
    if status in (401, 403):
        return LLMAuthError(f"{summary}: authentication or permission", status=status, code=code)
    if status == 429:
        if code == "insufficient_quota" or "insufficient_quota" in text:
            return LLMAuthError(f"{summary}: quota exhausted", status=status, code=code)
        if any(p in text for p in TOO_LARGE_429_PATTERNS):
            return ContextOverflowError(f"{summary}: request too large", status=status, code=code)
        delay = retry_after_seconds(exc.response.headers)
        return LLMRateLimitError(f"{summary}: rate limited", code=code, retry_after_seconds=delay)
    if status in (408, 409):
        return LLMTransientError(f"{summary}: retryable", status=status, code=code)
    if any(p in text for p in VALIDATION_PATTERNS):
        return LLMFatalError(f"{summary}: request rejected", status=status, code=code)
    # Local servers (vLLM, llama.cpp) report overflow as 500 too, so patterns apply to 5xx.
    overflow = code == "context_length_exceeded" or any(p in text for p in OVERFLOW_PATTERNS)
    if overflow and (status in (400, 422) or status >= 500):
        return ContextOverflowError(f"{summary}: context too long", status=status, code=code)
    if status >= 500:
        return LLMTransientError(f"{summary}: server error", status=status, code=code)
    return LLMFatalError(f"{summary}: request rejected", status=status, code=code)


def _error_text(exc: openai.APIStatusError) -> str:
    """Everything the provider said, lower-cased: message, code, type and a raw (HTML) body."""
    parts = [exc.message or "", exc.code or "", exc.type or ""]
    body = exc.body
    if isinstance(body, str):
        parts.append(body)
    elif isinstance(body, Mapping):
        parts.extend(str(v) for v in body.values() if isinstance(v, str))
    return " ".join(parts).lower()


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The server's `retry-after-ms` or `retry-after` (seconds or HTTP date), if usable."""
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value) / divisor
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            delay = email.utils.mktime_tz(parsed) - time.time()
        if delay >= 0 and delay == delay:  # rejects NaN
            return delay
    return None


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

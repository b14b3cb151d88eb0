"""The LLM error tree, and the classifier that maps any completion failure onto it."""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping

import openai

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

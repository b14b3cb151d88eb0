"""A `Summarizer` backed by any OpenAI-compatible chat completions endpoint."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

import openai

from compactbot.compression.redact import redact
from compactbot.compression.summarizer import (
    SummaryAuthError,
    SummaryError,
    SummaryNetworkError,
    SummaryRequest,
    SummaryTransientError,
)
from compactbot.compression.template import (
    build_summary_prompt,
    ensure_pins,
    is_summary_text,
    summary_body,
)
from compactbot.compression.transcript import strip_think

log = logging.getLogger(__name__)

UsageCallback = Callable[[str, int, int], None]
# Statuses that mean the credentials or the account are the problem, not this request.
_AUTH_STATUSES = frozenset({401, 402, 403})
_QUOTA_MARKERS = ("insufficient_quota", "quota", "out of credits", "billing")
# Rate limits, overload and server errors pass: the span waits for the model (SPEC 6.4).
_TRANSIENT_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


class OpenAISummarizer:
    """One user message with the summary prompt; errors mapped to the Summary* classes."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        model: str,
        *,
        fallback_model: str | None = None,
        timeout_seconds: float = 120.0,
        on_usage: UsageCallback | None = None,
    ) -> None:
        if not model:
            raise ValueError("OpenAISummarizer needs a model name")
        if timeout_seconds <= 0:
            raise ValueError(f"timeout_seconds must be positive, got {timeout_seconds!r}")
        self._client = client
        self._model = model
        self._fallback_model = fallback_model if fallback_model != model else None
        self._timeout_seconds = timeout_seconds
        self._on_usage = on_usage

    async def summarize(self, request: SummaryRequest) -> str:
        prompt = build_summary_prompt(request)
        try:
            body = await self._complete(self._model, prompt)
        except SummaryError as exc:
            if self._fallback_model is None:
                raise
            # A broken summary-model setting must not stall compaction (Hermes #8620):
            # every error class gets one retry on the main model.
            log.warning(
                "summary model failed (%s); retrying once on the main model",
                type(exc).__name__,
            )
            body = await self._complete(self._fallback_model, prompt)
        return ensure_pins(body, request.pins)

    async def _complete(self, model: str, prompt: str) -> str:
        started = time.monotonic()
        try:
            # One deadline over the SDK's own retries; the client's timeout still bounds each try.
            async with asyncio.timeout(self._timeout_seconds):
                # No max_tokens: a wire cap cut summaries mid-section (Hermes #60989).
                response = await self._client.chat.completions.create(
                    model=model, messages=[{"role": "user", "content": prompt}]
                )
        except (openai.APIConnectionError, TimeoutError, ConnectionError) as exc:
            raise SummaryNetworkError(
                f"summary model {model} unreachable: {_describe(exc)}"
            ) from exc
        except openai.APIStatusError as exc:
            raise _status_error(model, exc) from exc
        except (openai.OpenAIError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise SummaryError(f"summary model {model} failed: {_describe(exc)}") from exc
        text = _content(model, response)
        log.info(
            "summary model %s answered in %.1f s (%d chars)",
            model,
            time.monotonic() - started,
            len(text),
        )
        self._report_usage(model, response)
        return text

    def _report_usage(self, model: str, response: Any) -> None:
        usage = getattr(response, "usage", None)
        if self._on_usage is None or usage is None:
            return
        try:
            self._on_usage(model, int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
        except Exception:  # accounting must never cost the chat its summary
            log.exception("usage callback failed for summary model %s", model)


def _status_error(model: str, exc: openai.APIStatusError) -> SummaryError:
    detail = f"summary model {model} returned HTTP {exc.status_code}"
    code = str(getattr(exc, "code", "") or "")
    text = f"{code} {exc.message}".lower()
    if exc.status_code in _AUTH_STATUSES or any(marker in text for marker in _QUOTA_MARKERS):
        return SummaryAuthError(f"{detail} ({code or 'auth'})")
    if exc.status_code in _TRANSIENT_STATUSES or exc.status_code >= 500:
        return SummaryTransientError(f"{detail} ({code})" if code else detail)
    return SummaryError(f"{detail} ({code})" if code else detail)


def _content(model: str, response: Any) -> str:
    """The summary body of a completion; empty or reasoning-only output is a failure."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise SummaryError(f"summary model {model} returned no choices")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if not isinstance(content, str) or not content.strip():
        # A 200 with empty content must not replace the middle with a bare prefix (Hermes #11978).
        raise SummaryError(f"summary model {model} returned empty content")
    text = strip_think(content)
    if is_summary_text(text):
        text = summary_body(text)
    if not text.strip():
        raise SummaryError(f"summary model {model} returned only reasoning")
    # The model may echo a secret it read; SPEC 6.5 redacts the output too.
    return redact(text.strip())


def _describe(exc: BaseException) -> str:
    # Exception text from the SDK holds no request content; keep it short for the log line.
    return f"{type(exc).__name__}: {redact(str(exc)[:200])}"

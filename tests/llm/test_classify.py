"""classify_error on the exceptions the real openai client raises against the local fake."""

from __future__ import annotations

import socket
from typing import Any

import openai
import pytest

from compactbot.bot.llm.errors import (
    ContextOverflowError,
    LLMAuthError,
    LLMError,
    LLMFatalError,
    LLMRateLimitError,
    LLMTransientError,
    classify_error,
)
from tests.fakes.openai_server import Error, FakeOpenAI, Hang, Malformed

OVERFLOW_400 = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages "
        "resulted in 9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


def _error(message: str, *, code: str | None = None, type_: str = "invalid_request_error"):
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


async def _raised(base_url: str, *, sdk_timeout: float = 5.0) -> BaseException:
    """The exception one real SDK call raises (SDK retries off, so one request per call)."""
    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url=base_url, max_retries=0, timeout=sdk_timeout
    )
    try:
        await client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
        )
    except Exception as exc:
        return exc
    finally:
        await client.close()
    raise AssertionError("the call did not fail")


async def _classified(*script: Any, sdk_timeout: float = 5.0) -> LLMError:
    async with FakeOpenAI() as fake:
        fake.script(*script)
        exc = await _raised(fake.base_url, sdk_timeout=sdk_timeout)
    return classify_error(exc)


async def test_400_context_length_exceeded_is_overflow():
    error = await _classified(Error(400, OVERFLOW_400))
    assert isinstance(error, ContextOverflowError)
    assert error.status == 400


async def test_400_prompt_is_too_long_without_code_is_overflow():
    body = _error("prompt is too long: 210000 tokens > 200000 maximum")
    assert isinstance(await _classified(Error(400, body)), ContextOverflowError)


async def test_400_vllm_max_model_len_is_overflow():
    body = _error("This model's max_model_len is 4096, but the prompt has 5000 tokens")
    assert isinstance(await _classified(Error(400, body)), ContextOverflowError)


async def test_413_with_html_body_is_overflow():
    html = "<html><body><h1>413 Request Entity Too Large</h1><hr>nginx</body></html>"
    error = await _classified(Error(413, html))
    assert isinstance(error, ContextOverflowError)
    assert error.status == 413


async def test_unsupported_max_tokens_400_is_not_overflow():
    body = _error(
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead.",
        code="unsupported_parameter",
    )
    error = await _classified(Error(400, body))
    assert isinstance(error, LLMFatalError)
    assert not isinstance(error, ContextOverflowError)


async def test_other_400_is_fatal():
    error = await _classified(Error(400, _error("Invalid value for 'temperature'")))
    assert isinstance(error, LLMFatalError)


async def test_401_is_auth_error():
    body = _error("Incorrect API key provided", code="invalid_api_key")
    assert isinstance(await _classified(Error(401, body)), LLMAuthError)


async def test_429_insufficient_quota_is_auth_error():
    body = _error(
        "You exceeded your current quota", code="insufficient_quota", type_="insufficient_quota"
    )
    error = await _classified(Error(429, body))
    assert isinstance(error, LLMAuthError)
    assert error.status == 429


async def test_429_rate_limit_carries_retry_after():
    body = _error("Rate limit reached", code="rate_limit_exceeded", type_="requests")
    error = await _classified(Error(429, body, headers={"retry-after-ms": "250"}))
    assert isinstance(error, LLMRateLimitError)
    assert error.retry_after_seconds == pytest.approx(0.25)


async def test_429_request_too_large_is_overflow():
    body = _error(
        "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 45000.",
        code="rate_limit_exceeded",
        type_="tokens",
    )
    assert isinstance(await _classified(Error(429, body)), ContextOverflowError)


async def test_500_is_transient():
    error = await _classified(Error(500, _error("internal error", type_="server_error")))
    assert isinstance(error, LLMTransientError)
    assert error.status == 500


async def test_malformed_json_body_is_transient():
    error = await _classified(Malformed())
    assert isinstance(error, LLMTransientError)
    assert "malformed" in str(error)


async def test_hang_is_a_transient_timeout():
    error = await _classified(Hang(5.0), sdk_timeout=0.3)
    assert isinstance(error, LLMTransientError)
    assert "timed out" in str(error)


async def test_closed_port_is_a_transient_connection_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    error = classify_error(await _raised(f"http://127.0.0.1:{port}/v1", sdk_timeout=2.0))
    assert isinstance(error, LLMTransientError)
    assert "connection" in str(error)


def test_llm_errors_pass_through_unchanged():
    original = LLMAuthError("bad key", status=401)
    assert classify_error(original) is original


def test_unknown_exception_is_fatal():
    assert isinstance(classify_error(ValueError("boom")), LLMFatalError)


def test_every_class_shares_one_root():
    for cls in (
        ContextOverflowError,
        LLMAuthError,
        LLMRateLimitError,
        LLMTransientError,
        LLMFatalError,
    ):
        assert issubclass(cls, LLMError)

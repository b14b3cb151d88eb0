"""OpenAIChatClient against the local fake: parsing, our retry policy, cache marks, model list."""

from __future__ import annotations

import copy
import email.utils
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from compactbot.bot.llm.client import (
    LLMResponse,
    OpenAIChatClient,
    ToolCall,
    backoff_seconds,
    context_length_of,
    with_cache_breakpoints,
)
from compactbot.bot.llm.errors import (
    ContextOverflowError,
    LLMAuthError,
    LLMRateLimitError,
    LLMTimeoutError,
    LLMTransientError,
    retry_after_seconds,
)
from tests.fakes.openai_server import Empty, Error, FakeOpenAI, Hang, Malformed, Reply

QUOTA = {
    "error": {
        "message": "You exceeded your current quota",
        "type": "insufficient_quota",
        "code": "insufficient_quota",
    }
}
RATE = {
    "error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}
}
SERVER = {"error": {"message": "upstream failed", "type": "server_error", "code": None}}
CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are compactbot."},
    {"role": "user", "content": "[Alice] hi"},
    {"role": "assistant", "content": "Hello Alice"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "[Bob] what about"},
            {"type": "text", "text": "the deploy?"},
        ],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "search_history", "arguments": "{}"},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": '{"hits": []}'},
    {"role": "user", "content": "[Bob] anyone?"},
]


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def _client(fake: FakeOpenAI, model: str = "gpt-4o-mini", **kwargs: Any) -> OpenAIChatClient:
    kwargs.setdefault("retry_base_seconds", 0.01)
    return OpenAIChatClient(api_key="sk-test", base_url=fake.base_url, model=model, **kwargs)


def _cache_marks(value: Any) -> int:
    """How many cache_control marks a JSON value carries, at any depth."""
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(_cache_marks(v) for v in value.values())
    if isinstance(value, list):
        return sum(_cache_marks(v) for v in value)
    return 0


async def test_reply_returns_content_and_usage(fake: FakeOpenAI):
    fake.script(Reply("Hello there", prompt_tokens=123, completion_tokens=7))
    client = _client(fake)
    response = await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert response.content == "Hello there"
    assert response.prompt_tokens == 123
    assert response.completion_tokens == 7
    assert response.tool_calls == ()


async def test_tool_calls_are_parsed(fake: FakeOpenAI):
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search_history", "arguments": '{"query": "deploy"}'},
    }
    fake.script(Reply(None, tool_calls=[call]))
    client = _client(fake)
    response = await client.complete([{"role": "user", "content": "hi"}], tools=[])
    await client.aclose()
    assert response.tool_calls == (ToolCall("call_1", "search_history", '{"query": "deploy"}'),)
    assert response.as_message()["tool_calls"][0]["function"]["name"] == "search_history"


async def test_tools_are_sent_when_given(fake: FakeOpenAI):
    tool = {
        "type": "function",
        "function": {"name": "chat_stats", "parameters": {"type": "object", "properties": {}}},
    }
    fake.script(Reply("ok"))
    client = _client(fake)
    await client.complete([{"role": "user", "content": "hi"}], tools=[tool])
    await client.aclose()
    assert fake.completions[-1]["tools"] == [tool]


async def test_rate_limit_with_retry_after_ms_succeeds_on_second_request(fake: FakeOpenAI):
    fake.script(Error(429, RATE, headers={"retry-after-ms": "50"}), Reply("ok"))
    client = _client(fake, retry_base_seconds=60)  # a backoff instead of the header would hang
    response = await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert response.content == "ok"
    assert len(fake.requests) == 2


async def test_insufficient_quota_fails_after_one_request(fake: FakeOpenAI):
    fake.script(Error(429, QUOTA), Reply("never"))
    client = _client(fake, max_retries=5)
    with pytest.raises(LLMAuthError):
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert len(fake.requests) == 1


async def test_auth_failure_is_not_retried(fake: FakeOpenAI):
    fake.script(Error.unauthorized(), Reply("never"))
    client = _client(fake, max_retries=3)
    with pytest.raises(LLMAuthError):
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert len(fake.requests) == 1


async def test_rate_limit_beyond_max_retries_raises_rate_limit_error(fake: FakeOpenAI):
    fake.script(*[Error.rate_limited(retry_after_ms=10)] * 3, Reply("too late"))
    client = _client(fake, max_retries=2)
    with pytest.raises(LLMRateLimitError) as raised:
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert raised.value.retry_after_seconds == pytest.approx(0.01)
    assert len(fake.requests) == 3


async def test_sdk_retries_are_disabled(fake: FakeOpenAI):
    fake.script(Error.server_error(), Reply("ok"))
    client = _client(fake, max_retries=1)
    await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert [r.headers.get("x-stainless-retry-count") for r in fake.requests] == ["0", "0"]


def test_retry_after_prefers_milliseconds():
    assert retry_after_seconds({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_retry_after_accepts_an_http_date():
    in_ten_seconds = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= (retry_after_seconds({"retry-after": in_ten_seconds}) or 0) <= 10


def test_backoff_grows_with_jitter_and_a_cap():
    assert 0.375 <= backoff_seconds(0) <= 0.5
    assert 0.75 <= backoff_seconds(1) <= 1.0
    assert backoff_seconds(30) <= 8.0


async def test_overflow_is_raised_without_retrying(fake: FakeOpenAI):
    body = {"error": {"message": "prompt is too long", "type": "invalid_request_error"}}
    fake.script(Error(400, body), Reply("never"))
    client = _client(fake, max_retries=3)
    with pytest.raises(ContextOverflowError):
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert len(fake.requests) == 1


async def test_two_server_errors_then_success_with_two_retries(fake: FakeOpenAI):
    fake.script(Error(500, SERVER), Error(500, SERVER), Reply("finally"))
    client = _client(fake, max_retries=2)
    response = await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert response.content == "finally"
    assert len(fake.requests) == 3


async def test_server_errors_beyond_max_retries_raise_transient(fake: FakeOpenAI):
    fake.script(Error(500, SERVER), Error(500, SERVER), Reply("too late"))
    client = _client(fake, max_retries=1)
    with pytest.raises(LLMTransientError):
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert len(fake.requests) == 2


async def test_empty_choices_is_transient(fake: FakeOpenAI):
    fake.script(Empty(no_choices=True))
    client = _client(fake, max_retries=0)
    with pytest.raises(LLMTransientError):
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
async def test_malformed_body_is_transient(fake: FakeOpenAI, content_type: str):
    fake.script(Malformed(content_type=content_type))
    client = _client(fake, max_retries=0)
    with pytest.raises(LLMTransientError, match="malformed"):
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()


async def test_malformed_body_is_retried(fake: FakeOpenAI):
    fake.script(Malformed(), Reply("recovered"))
    client = _client(fake, max_retries=1)
    assert (await client.complete([{"role": "user", "content": "hi"}])).content == "recovered"
    await client.aclose()
    assert len(fake.requests) == 2


async def test_timeout_is_not_retried_because_a_hung_endpoint_would_hang_again(fake: FakeOpenAI):
    fake.script(Hang(5.0), Reply("second try"))
    client = _client(fake, timeout_seconds=0.3, max_retries=1)
    with pytest.raises(LLMTimeoutError):
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert len(fake.requests) == 1


async def test_deadline_bounds_the_call_and_its_retries_together(fake: FakeOpenAI):
    fake.script(Error(500, SERVER), Error(500, SERVER), Hang(120.0))
    client = _client(fake, timeout_seconds=60, max_retries=5, deadline_seconds=0.5)
    started = time.monotonic()
    with pytest.raises(LLMTimeoutError):
        await client.complete([{"role": "user", "content": "hi"}])
    elapsed = time.monotonic() - started
    await client.aclose()
    assert 0.4 < elapsed < 1.5
    assert len(fake.requests) == 3  # two server errors retried, then the hang: no more


async def test_a_retry_that_cannot_finish_before_the_deadline_is_not_started(fake: FakeOpenAI):
    fake.script(Error.rate_limited(retry_after_ms=5_000), Reply("too late"))
    client = _client(fake, max_retries=3, deadline_seconds=1.0)
    started = time.monotonic()
    with pytest.raises(LLMRateLimitError):
        await client.complete([{"role": "user", "content": "hi"}])
    await client.aclose()
    assert time.monotonic() - started < 1.0
    assert len(fake.requests) == 1


async def test_claude_request_carries_four_cache_marks_and_leaves_input_alone(fake: FakeOpenAI):
    fake.script(Reply("ok"))
    messages = copy.deepcopy(CONVERSATION)
    client = _client(fake, model="anthropic/claude-sonnet-4")
    await client.complete(messages)
    await client.aclose()
    sent = fake.completions[-1]["messages"]
    assert messages == CONVERSATION
    assert _cache_marks(sent) == 4
    assert _cache_marks(sent[0]) == 1  # the system prompt
    # The empty assistant tool-call stub cannot carry a mark, so the three go to the last three
    # messages with text: the list-content user turn, the tool result and the newest user turn.
    assert [i for i, m in enumerate(sent) if _cache_marks(m)] == [0, 3, 5, 6]
    assert sent[6]["content"] == [
        {"type": "text", "text": "[Bob] anyone?", "cache_control": {"type": "ephemeral"}}
    ]
    assert "cache_control" not in sent[3]["content"][0]


async def test_gpt_request_has_no_cache_marks(fake: FakeOpenAI):
    fake.script(Reply("ok"))
    client = _client(fake, model="gpt-4o")
    await client.complete(copy.deepcopy(CONVERSATION))
    await client.aclose()
    assert _cache_marks(fake.completions[-1]) == 0


def test_cache_breakpoints_without_system_prompt_mark_last_three():
    messages = [{"role": "user", "content": f"m{i}"} for i in range(5)]
    marked = with_cache_breakpoints(messages)
    assert [bool(_cache_marks(m)) for m in marked] == [False, False, True, True, True]
    assert messages == [{"role": "user", "content": f"m{i}"} for i in range(5)]


async def test_fetch_context_length_reads_the_model_list():
    async with FakeOpenAI(context_length=32_768, models=("other", "org/small-model")) as fake:
        client = _client(fake, model="org/small-model")
        length = await client.fetch_context_length()
        await client.aclose()
    assert length == 32_768
    assert fake.requests[-1].path == "/v1/models"


def test_context_length_of_reads_vllm_max_model_len():
    assert context_length_of({"id": "m", "max_model_len": 4096}) == 4096
    assert context_length_of({"id": "m", "context_length": "8192"}) == 8192
    assert context_length_of({"id": "m", "context_length": None}) is None
    assert context_length_of({"id": "m", "context_length": True}) is None


async def test_fetch_context_length_is_none_for_an_unknown_model(fake: FakeOpenAI):
    client = _client(fake, model="no-such-model")
    assert await client.fetch_context_length() is None
    await client.aclose()


async def test_fetch_context_length_is_none_when_the_endpoint_is_down():
    client = OpenAIChatClient(api_key="sk-test", base_url="http://127.0.0.1:9/v1", model="m")
    assert await client.fetch_context_length() is None
    await client.aclose()


def test_as_message_without_tool_calls_is_plain():
    response = LLMResponse("hi", (), 1, 1, "m")
    assert response.as_message() == {"role": "assistant", "content": "hi"}


def test_negative_max_retries_is_rejected_at_construction():
    with pytest.raises(ValueError, match="max_retries"):
        OpenAIChatClient(api_key="k", base_url=None, model="m", max_retries=-1)

"""OpenAISummarizer through the real openai client against a local fake server."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator

import pytest
from openai import AsyncOpenAI

from compactbot.compression.openai_summarizer import OpenAISummarizer
from compactbot.compression.summarizer import (
    SummaryAuthError,
    SummaryError,
    SummaryNetworkError,
    SummaryRequest,
)
from tests.fakes.openai_server import Empty, Error, FakeOpenAI, Hang, Malformed, Reply, unused_port

REQUEST = SummaryRequest(
    turns=[{"role": "user", "content": "[Alice] The budget is $5,000."}],
    previous_summary=None,
    focus_topic=None,
    budget_tokens=2000,
    today=dt.date(2026, 11, 2),
    pins=("Deploy only on Tuesdays",),
)
SUMMARY = "## Key facts and exact values\n- Alice: the budget is $5,000."


@pytest.fixture
async def fake() -> AsyncIterator[FakeOpenAI]:
    async with FakeOpenAI() as server:
        yield server


def _client(base_url: str, timeout: float = 5.0) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0, timeout=timeout)


async def test_reply_returns_the_text_and_reports_usage(fake: FakeOpenAI) -> None:
    usage: list[tuple[str, int, int]] = []
    fake.script(Reply(SUMMARY, prompt_tokens=1234, completion_tokens=56))
    summarizer = OpenAISummarizer(
        _client(fake.base_url), "sum-model", on_usage=lambda *u: usage.append(u)
    )
    text = await summarizer.summarize(REQUEST)
    assert text.startswith(SUMMARY)
    assert usage == [("sum-model", 1234, 56)]


async def test_request_is_one_user_message_without_max_tokens(fake: FakeOpenAI) -> None:
    await OpenAISummarizer(_client(fake.base_url), "sum-model").summarize(REQUEST)
    [body] = fake.completions
    assert body["model"] == "sum-model"
    assert [m["role"] for m in body["messages"]] == ["user"]
    said = '{"speaker": "Alice", "role": "user", "text": "The budget is $5,000."}'
    assert said in body["messages"][0]["content"]
    assert "max_tokens" not in body and "max_completion_tokens" not in body


async def test_default_fake_reply_counts_prompt_tokens(fake: FakeOpenAI) -> None:
    usage: list[tuple[str, int, int]] = []
    summarizer = OpenAISummarizer(_client(fake.base_url), "m", on_usage=lambda *u: usage.append(u))
    await summarizer.summarize(REQUEST)
    assert usage[0][1] > 100


async def test_pins_are_added_when_the_model_leaves_them_out(fake: FakeOpenAI) -> None:
    fake.script(Reply(SUMMARY))
    text = await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)
    assert "## Pinned facts\n- Deploy only on Tuesdays" in text


async def test_think_blocks_and_echoed_secrets_are_removed(fake: FakeOpenAI) -> None:
    key = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
    fake.script(Reply(f"<think>planning</think>{SUMMARY}\n- key {key}"))
    text = await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)
    assert "planning" not in text and key not in text
    assert text.startswith(SUMMARY)


async def test_unauthorized_is_an_auth_error(fake: FakeOpenAI) -> None:
    fake.script(Error.unauthorized())
    with pytest.raises(SummaryAuthError):
        await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)


async def test_insufficient_quota_is_an_auth_error(fake: FakeOpenAI) -> None:
    fake.script(Error.insufficient_quota())
    with pytest.raises(SummaryAuthError):
        await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)


async def test_server_error_is_a_plain_summary_error(fake: FakeOpenAI) -> None:
    fake.script(Error.server_error())
    with pytest.raises(SummaryError) as caught:
        await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)
    assert not isinstance(caught.value, SummaryAuthError | SummaryNetworkError)


async def test_rate_limit_after_retries_is_a_plain_summary_error(fake: FakeOpenAI) -> None:
    fake.script(Error.rate_limited(retry_after_ms=10))
    with pytest.raises(SummaryError) as caught:
        await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)
    assert not isinstance(caught.value, SummaryAuthError | SummaryNetworkError)


async def test_malformed_body_is_a_plain_summary_error(fake: FakeOpenAI) -> None:
    fake.script(Malformed())
    with pytest.raises(SummaryError) as caught:
        await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)
    assert not isinstance(caught.value, SummaryAuthError | SummaryNetworkError)


async def test_client_timeout_is_a_network_error(fake: FakeOpenAI) -> None:
    fake.script(Hang(10))
    summarizer = OpenAISummarizer(_client(fake.base_url, timeout=0.3), "m")
    with pytest.raises(SummaryNetworkError):
        await summarizer.summarize(REQUEST)


async def test_own_deadline_is_a_network_error(fake: FakeOpenAI) -> None:
    fake.script(Hang(10))
    summarizer = OpenAISummarizer(_client(fake.base_url, timeout=30), "m", timeout_seconds=0.3)
    with pytest.raises(SummaryNetworkError):
        await summarizer.summarize(REQUEST)


async def test_connection_refused_is_a_network_error() -> None:
    client = _client(f"http://127.0.0.1:{unused_port()}/v1")
    with pytest.raises(SummaryNetworkError):
        await OpenAISummarizer(client, "m").summarize(REQUEST)


@pytest.mark.parametrize("empty", [Empty(), Empty(no_choices=True), Reply("   \n")])
async def test_empty_content_is_a_summary_error(fake: FakeOpenAI, empty: object) -> None:
    fake.script(empty)  # type: ignore[arg-type]
    with pytest.raises(SummaryError):
        await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)


async def test_reasoning_only_output_is_a_summary_error(fake: FakeOpenAI) -> None:
    fake.script(Reply("<think>all my thoughts</think>"))
    with pytest.raises(SummaryError):
        await OpenAISummarizer(_client(fake.base_url), "m").summarize(REQUEST)


async def test_failing_summary_model_is_retried_once_on_the_main_model(fake: FakeOpenAI) -> None:
    usage: list[tuple[str, int, int]] = []
    fake.script(Error.server_error(), Reply(SUMMARY))
    summarizer = OpenAISummarizer(
        _client(fake.base_url),
        "cheap-model",
        fallback_model="main-model",
        on_usage=lambda *u: usage.append(u),
    )
    assert (await summarizer.summarize(REQUEST)).startswith(SUMMARY)
    assert [body["model"] for body in fake.completions] == ["cheap-model", "main-model"]
    assert [u[0] for u in usage] == ["main-model"]


async def test_auth_failure_of_the_summary_model_is_also_retried(fake: FakeOpenAI) -> None:
    fake.script(Error.unauthorized(), Reply(SUMMARY))
    summarizer = OpenAISummarizer(_client(fake.base_url), "cheap", fallback_model="main")
    assert (await summarizer.summarize(REQUEST)).startswith(SUMMARY)


async def test_main_model_failure_is_raised_after_the_retry(fake: FakeOpenAI) -> None:
    fake.script(Error.server_error(), Error.unauthorized())
    summarizer = OpenAISummarizer(_client(fake.base_url), "cheap", fallback_model="main")
    with pytest.raises(SummaryAuthError):
        await summarizer.summarize(REQUEST)
    assert len(fake.completions) == 2


async def test_no_retry_when_fallback_is_the_same_model(fake: FakeOpenAI) -> None:
    fake.script(Error.server_error(), Reply(SUMMARY))
    summarizer = OpenAISummarizer(_client(fake.base_url), "main", fallback_model="main")
    with pytest.raises(SummaryError):
        await summarizer.summarize(REQUEST)
    assert len(fake.completions) == 1


async def test_failing_usage_callback_does_not_lose_the_summary(fake: FakeOpenAI) -> None:
    def broken(model: str, prompt: int, completion: int) -> None:
        raise RuntimeError("meter down")

    fake.script(Reply(SUMMARY))
    summarizer = OpenAISummarizer(_client(fake.base_url), "m", on_usage=broken)
    assert (await summarizer.summarize(REQUEST)).startswith(SUMMARY)


async def test_fake_lists_models_with_context_length() -> None:
    async with FakeOpenAI(context_length=32_768, models=("a", "b")) as server:
        models = await _client(server.base_url).models.list()
    assert [m.id for m in models.data] == ["a", "b"]
    assert all(m.model_extra and m.model_extra["context_length"] == 32_768 for m in models.data)


def test_rejects_a_missing_model_name() -> None:
    with pytest.raises(ValueError, match="model"):
        OpenAISummarizer(_client("http://127.0.0.1:9/v1"), "")

from __future__ import annotations

import asyncio

import pytest

from compactbot.compression import (
    CompressorConfig,
    ContextCompressor,
    SummaryAuthError,
    SummaryError,
    SummaryNetworkError,
)
from compactbot.compression.template import is_summary_text
from tests.compression.scripted import (
    FailingSummarizer,
    FakeClock,
    FixedSummarizer,
    ScriptedSummarizer,
    group_chat,
    system,
    user,
)

CONFIG = CompressorConfig(context_length=8_000, protect_last_n=6)


def _chat() -> list[dict]:
    return [system(), *group_chat(20, filler=6)]


def _summary_text(messages: list[dict]) -> str:
    return next(m["content"] for m in messages[1:] if is_summary_text(str(m["content"])))


async def test_auth_failure_aborts_and_leaves_messages_unchanged() -> None:
    messages = _chat()
    compressor = ContextCompressor(CONFIG, FailingSummarizer(SummaryAuthError("401 bad key")))
    result = await compressor.compress(messages)
    assert result.outcome == "aborted"
    assert result.messages == messages
    assert result.summary is None
    assert compressor.state.cooldown_cause == "auth"
    assert compressor.compression_count == 0


@pytest.mark.parametrize(
    "exc",
    [
        ConnectionError("refused"),
        ConnectionResetError("reset"),
        TimeoutError(),
        asyncio.TimeoutError(),  # noqa: UP041 - summarizers written for 3.10 raise this name
        SummaryNetworkError("unreachable"),
    ],
)
async def test_network_failures_abort(exc: BaseException) -> None:
    messages = _chat()
    compressor = ContextCompressor(CONFIG, FailingSummarizer(exc))
    result = await compressor.compress(messages)
    assert result.outcome == "aborted"
    assert result.messages == messages
    assert compressor.state.cooldown_cause == "network"


@pytest.mark.parametrize("exc", [RuntimeError("boom"), SummaryError("bad"), ValueError("x")])
async def test_other_failures_fall_back_to_deterministic_summary(exc: BaseException) -> None:
    compressor = ContextCompressor(CONFIG, FailingSummarizer(exc))
    result = await compressor.compress(_chat())
    assert result.outcome == "fallback"
    assert "unavailable" in _summary_text(result.messages).lower()
    assert result.error is not None and type(exc).__name__ in result.error
    assert compressor.state.cooldown_cause == "other"
    assert compressor.compression_count == 1


async def test_abort_on_summary_failure_keeps_messages() -> None:
    config = CompressorConfig(context_length=8_000, protect_last_n=6, abort_on_summary_failure=True)
    messages = _chat()
    result = await ContextCompressor(config, FailingSummarizer(RuntimeError())).compress(messages)
    assert result.outcome == "aborted"
    assert result.messages == messages


@pytest.mark.parametrize("value", ["", "   \n ", None])
async def test_empty_blank_or_none_summary_falls_back(value: str | None) -> None:
    result = await ContextCompressor(CONFIG, FixedSummarizer(value)).compress(_chat())
    assert result.outcome == "fallback"


async def test_auth_cooldown_aborts_without_calling_summarizer() -> None:
    summarizer = FailingSummarizer(SummaryAuthError("401"))
    clock = FakeClock()
    compressor = ContextCompressor(CONFIG, summarizer, clock=clock)
    await compressor.compress(_chat())
    clock.advance(30)
    result = await compressor.compress(_chat())
    assert result.outcome == "aborted"
    assert len(summarizer.requests) == 1


async def test_other_cooldown_uses_deterministic_summary_without_calling() -> None:
    summarizer = FailingSummarizer(RuntimeError())
    clock = FakeClock()
    compressor = ContextCompressor(CONFIG, summarizer, clock=clock)
    await compressor.compress(_chat())
    result = await compressor.compress(_chat())
    assert result.outcome == "fallback"
    assert len(summarizer.requests) == 1


async def test_cooldown_ends_and_summarizer_is_called_again() -> None:
    summarizer = FailingSummarizer(SummaryNetworkError("down"))
    clock = FakeClock()
    compressor = ContextCompressor(CONFIG, summarizer, clock=clock)
    first = await compressor.compress(_chat())
    assert first.cooldown_until == clock.now + 60
    clock.advance(61)
    second = await compressor.compress(_chat())
    assert len(summarizer.requests) == 2
    assert second.cooldown_until == clock.now + 300


async def test_force_clears_cooldown_and_calls_summarizer() -> None:
    clock = FakeClock()
    summarizer = ScriptedSummarizer(SummaryAuthError("401"), "## Topics\n- fixed key")
    compressor = ContextCompressor(CONFIG, summarizer, clock=clock)
    await compressor.compress(_chat())
    result = await compressor.compress(_chat(), force=True)
    assert result.outcome == "compressed"
    # One failed call, then the forced run reads the middle (in chunks on an 8K window).
    assert len(summarizer.requests) >= 2
    assert compressor.state.failure_streak == 0
    assert compressor.state.cooldown_until == 0


async def test_summarizer_output_is_redacted_again() -> None:
    secret = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    result = await ContextCompressor(CONFIG, FixedSummarizer(f"token {secret}")).compress(_chat())
    assert secret not in (result.summary or "")
    assert secret not in str(result.messages)


async def test_summarizer_failure_never_raises_from_compress() -> None:
    messages = [system(), *group_chat(20, filler=6), user("Zed", "last")]
    result = await ContextCompressor(CONFIG, FailingSummarizer(KeyError("k"))).compress(messages)
    assert result.outcome == "fallback"

from __future__ import annotations

import copy
import datetime as dt
from types import SimpleNamespace

from compactbot.compression import (
    SUMMARY_END_MARKER,
    CompressorConfig,
    CompressorState,
    ContextCompressor,
    SummaryRequest,
)
from compactbot.compression.template import is_summary_text, summary_body, wrap_summary
from tests.compression.scripted import (
    FakeClock,
    PerfectSummarizer,
    assistant,
    group_chat,
    system,
    tool_round,
    user,
)

CONFIG = CompressorConfig(context_length=8_000, protect_last_n=6)
SECRET = "sk-proj-abcdefghijklmnopqrstuvwx123456"


def _chat(turns: int = 20) -> list[dict]:
    return [system(), *group_chat(turns, filler=6)]


def _summaries(messages: list[dict]) -> list[dict]:
    return [m for m in messages if m["role"] != "system" and is_summary_text(str(m["content"]))]


async def test_compress_replaces_middle_with_one_summary() -> None:
    result = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(_chat())
    assert result.outcome == "compressed"
    [summary] = _summaries(result.messages)
    assert summary["content"].endswith(SUMMARY_END_MARKER)
    assert result.tokens_after < result.tokens_before
    assert 0 < result.savings_pct <= 100


async def test_summary_message_is_wrapped_body_plus_end_marker() -> None:
    result = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(_chat(), pins=["P1"])
    [summary] = _summaries(result.messages)
    assert result.summary is not None and "- P1" in result.summary
    # Standalone or merged into the first tail message, the summary closes the content.
    assert summary["content"].endswith(f"{wrap_summary(result.summary)}\n\n{SUMMARY_END_MARKER}")
    assert summary_body(summary["content"]) == result.summary


async def test_without_summarizer_deterministic_summary_is_compressed_outcome() -> None:
    result = await ContextCompressor(CONFIG).compress(_chat())
    assert result.outcome == "compressed"
    assert len(_summaries(result.messages)) == 1


async def test_compress_never_mutates_input() -> None:
    messages = _chat() + tool_round(["a", "b"], result="x" * 900)
    before = copy.deepcopy(messages)
    await ContextCompressor(CONFIG, PerfectSummarizer()).compress(messages)
    assert messages == before


async def test_state_records_count_previous_summary_and_sentinel() -> None:
    compressor = ContextCompressor(CONFIG, PerfectSummarizer())
    result = await compressor.compress(_chat())
    assert compressor.compression_count == 1
    assert compressor.state.previous_summary == result.summary
    assert compressor.state.last_prompt_tokens == -1


async def test_request_carries_today_participants_pins_and_derived_focus() -> None:
    summarizer = PerfectSummarizer()
    clock = FakeClock(dt.datetime(2026, 11, 2, 23, 30, tzinfo=dt.UTC).timestamp())
    await ContextCompressor(CONFIG, summarizer, clock=clock).compress(_chat(), pins=["rule 1"])
    # An 8K window reads the middle in consecutive chunks; every call carries the same ask.
    request = summarizer.requests[0]
    assert {name for r in summarizer.requests for name in r.participants} == {
        "Alice",
        "Bob",
        "Carol",
    }
    for request in summarizer.requests:
        assert request.today == dt.date(2026, 11, 2)
        assert list(request.pins) == ["rule 1"]
        assert request.focus_topic and "FACT-19" in request.focus_topic
        assert request.budget_tokens == 2_000
    # The first call starts from an empty memory; later chunks see what earlier ones added.
    first = summarizer.requests[0]
    assert first.memory == "" and first.previous_summary is None


async def test_explicit_focus_topic_wins() -> None:
    summarizer = PerfectSummarizer()
    await ContextCompressor(CONFIG, summarizer).compress(_chat(), focus_topic="the printer")
    assert summarizer.requests[0].focus_topic == "the printer"


async def test_short_chat_is_noop_and_has_no_content_to_compress() -> None:
    compressor = ContextCompressor(CONFIG, PerfectSummarizer())
    messages = [system(), user("A", "hi"), assistant("hello")]
    assert not compressor.has_content_to_compress(messages)
    result = await compressor.compress(messages)
    assert result.outcome == "noop"
    assert result.messages == messages


async def test_has_content_to_compress_on_long_chat() -> None:
    assert ContextCompressor(CONFIG).has_content_to_compress(_chat())


def test_should_compress_at_threshold() -> None:
    compressor = ContextCompressor(CONFIG)
    assert compressor.threshold_tokens == 6_800
    assert compressor.should_compress(6_800)
    assert not compressor.should_compress(6_799)


def test_update_from_response_accepts_dicts_and_objects_prompt_tokens_only() -> None:
    compressor = ContextCompressor(CONFIG)
    compressor.update_from_response({"prompt_tokens": 7_000, "completion_tokens": 1})
    assert compressor.should_compress()
    compressor.update_from_response(SimpleNamespace(prompt_tokens=100, completion_tokens=90_000))
    assert compressor.last_prompt_tokens == 100
    assert not compressor.should_compress()


def test_missing_usage_keeps_last_count() -> None:
    compressor = ContextCompressor(CONFIG)
    compressor.update_from_response({"prompt_tokens": 7_000})
    compressor.update_from_response(None)
    compressor.update_from_response({})
    assert compressor.last_prompt_tokens == 7_000


async def test_restart_takes_summary_from_transcript_and_decays_head() -> None:
    first = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(_chat())
    grown = first.messages + group_chat(12, start=20, filler=6)
    summarizer = PerfectSummarizer()
    restarted = ContextCompressor(CONFIG, summarizer)  # fresh state: as after a restart
    result = await restarted.compress(grown)
    assert result.outcome == "compressed"
    request = summarizer.requests[0]
    # The old summary's entries come back as the memory the new turns fold into.
    for line in first.summary.splitlines() if first.summary else []:
        if line.startswith("- FACT-"):
            assert line.removeprefix("- ") in (request.memory or "")
    assert len(_summaries(result.messages)) == 1
    # Decayed head: the first turns, protected the first time, are summarised now.
    assert grown[1] in first.messages
    assert grown[1] not in result.messages


async def test_ten_compactions_keep_pins_and_facts() -> None:
    pins = ["Never deploy on Fridays.", "Budget: 4,200.50 EUR — approved 2026-10-01"]
    compressor = ContextCompressor(CONFIG, PerfectSummarizer())
    messages = _chat(12)
    turn = 12
    for _ in range(10):
        result = await compressor.compress(messages, pins=pins)
        assert result.outcome == "compressed"
        messages = result.messages + group_chat(8, start=turn, filler=6)
        turn += 8
        assert result.summary is not None
        for pin in pins:
            assert pin in result.summary
    assert compressor.compression_count == 10
    final = result.summary or ""
    kept = [k for k in range(turn - 8) if f"FACT-{k}:" in final or f"FACT-{k}:" in str(messages)]
    assert kept == list(range(turn - 8))
    assert len(_summaries(messages)) == 1


async def test_secret_never_reaches_summarizer_or_output() -> None:
    messages = [system(), user("Alice", f"my key is {SECRET} FACT-1: keep")]
    messages += tool_round(["s1"], name="http", args={"header": f"Bearer {SECRET}", "u": "x"})
    messages += group_chat(20, start=2, filler=6)
    summarizer = PerfectSummarizer(extra=f"echoed {SECRET}")
    compressor = ContextCompressor(CONFIG, summarizer)
    result = await compressor.compress(messages)
    assert result.outcome == "compressed"
    request = summarizer.requests[0]
    assert SECRET not in repr(request.turns)
    assert SECRET not in (request.previous_summary or "")
    assert SECRET not in (result.summary or "")
    # Second round: the previous summary handed over is clean too.
    second = PerfectSummarizer()
    await ContextCompressor(CONFIG, second).compress(result.messages + group_chat(10, start=40))
    assert SECRET not in (second.requests[0].previous_summary or "")


async def test_state_resumes_from_given_compressor_state() -> None:
    state = CompressorState(compression_count=4, last_prompt_tokens=7_000)
    compressor = ContextCompressor(CONFIG, state=state)
    assert compressor.compression_count == 4
    assert compressor.should_compress()


async def test_merged_summary_is_unwrapped_on_next_compaction() -> None:
    head = [system(), user("A", "FACT-900: first"), assistant("ok")]
    tail = [user("C", "FACT-901: merged target " + "x " * 50)]
    from compactbot.compression.assemble import assemble

    merged = assemble(head, "- FACT-800: old summary fact", tail)
    assert is_summary_text(merged[-1]["content"])
    messages = merged + group_chat(20, start=1, filler=6)
    summarizer = PerfectSummarizer()
    result = await ContextCompressor(CONFIG, summarizer).compress(messages)
    request = summarizer.requests[0]
    assert "FACT-800" in (request.previous_summary or "")
    assert "FACT-901" in repr(request.turns)
    assert summary_body(_summaries(result.messages)[0]["content"]).count("FACT-800") == 1


async def _trip_breaker(compressor: ContextCompressor) -> None:
    for _ in range(2):
        await compressor.compress(_chat())
        compressor.update_from_response({"prompt_tokens": 7_000})


async def test_two_ineffective_compactions_pause_automatic_compaction() -> None:
    compressor = ContextCompressor(CONFIG, PerfectSummarizer(), clock=FakeClock())
    await _trip_breaker(compressor)
    assert not compressor.should_compress(10_000)
    result = await compressor.compress(_chat())
    assert (result.outcome, result.messages) == ("noop", _chat())


async def test_after_pause_one_probe_runs_and_a_failed_probe_pauses_again() -> None:
    clock = FakeClock()
    compressor = ContextCompressor(CONFIG, PerfectSummarizer(), clock=clock)
    await _trip_breaker(compressor)
    clock.advance(300)
    assert (await compressor.compress(_chat())).outcome == "compressed"
    tripped = compressor.update_from_response({"prompt_tokens": 7_000})
    assert tripped
    assert compressor.state.pause_until == clock.now + 600


async def test_fitting_prompt_after_compaction_clears_strikes() -> None:
    compressor = ContextCompressor(CONFIG, PerfectSummarizer(), clock=FakeClock())
    await compressor.compress(_chat())
    compressor.update_from_response({"prompt_tokens": 7_000})
    assert compressor.state.strikes == 1
    compressor.update_from_response({"prompt_tokens": 3_000})
    assert compressor.state.strikes == 0


async def test_force_runs_while_breaker_paused() -> None:
    compressor = ContextCompressor(CONFIG, PerfectSummarizer(), clock=FakeClock())
    await _trip_breaker(compressor)
    result = await compressor.compress(_chat(), force=True)
    assert result.outcome == "compressed"


class _VerboseSummarizer:
    """Echoes all of its input: the rendered summary is still bounded by half the span."""

    async def summarize(self, request: SummaryRequest) -> str:
        text = "\n".join(str(turn.get("content")) for turn in request.turns)
        return text


async def test_low_savings_count_as_a_strike() -> None:
    # A big protected head makes the middle a small share of the prompt: little to save.
    config = CompressorConfig(context_length=128_000, protect_last_n=6)
    chat = [system("rules " * 40_000), *group_chat(20, filler=6)]
    compressor = ContextCompressor(config, _VerboseSummarizer())
    result = await compressor.compress(chat, force=True)
    assert result.outcome == "compressed"
    assert result.savings_pct < 10
    assert compressor.state.strikes == 1

"""Edge cases Hermes Agent learned the hard way (study section 3); each test names its issue."""

from __future__ import annotations

import json

from compactbot.compression import CompressorConfig, CompressorState, ContextCompressor
from compactbot.compression.assemble import assemble, drop_unpaired_tool_messages, summary_placement
from compactbot.compression.boundaries import find_tail_start, head_size
from compactbot.compression.prune import prune
from compactbot.compression.template import SUMMARY_END_MARKER, SUMMARY_PREFIX, is_summary_text
from compactbot.compression.thresholds import compute_threshold_tokens
from tests.compression.scripted import (
    FailingSummarizer,
    FakeClock,
    FixedSummarizer,
    PerfectSummarizer,
    ScriptedSummarizer,
    assistant,
    group_chat,
    system,
    tool_round,
    user,
)

CONFIG = CompressorConfig(context_length=8_000, protect_last_n=6)


def _chat(turns: int = 20) -> list[dict]:
    return [system(), *group_chat(turns, filler=6)]


def test_whole_transcript_within_soft_ceiling_rewalks_raw_budget_40803() -> None:
    """#40803: everything under 1.5x budget must still leave something to summarise."""
    messages = [system()] + [user("A", str(i)) for i in range(12)]
    tokens = [100] * 13  # 1,200 after the head: over the raw 1,000, under the soft 1,500
    start = find_tail_start(messages, 1000, head_end=1, protect_last_n=3, tokens=tokens)
    assert 1 < start < 13
    assert sum(tokens[start:]) <= 1000


def test_transcript_within_raw_budget_keeps_only_the_floor_40803() -> None:
    """#40803 / SPEC 6.9: if it all fits the raw budget, the tail is the message floor."""
    messages = [system()] + [user("A", str(i)) for i in range(12)]
    start = find_tail_start(messages, 10_000, head_end=1, protect_last_n=3, tokens=[10] * 13)
    assert start == 13 - 3


def test_last_user_message_always_in_tail_10896() -> None:
    """#10896: the latest ask must never land in the summary."""
    messages = [system(), *group_chat(3), user("Dana", "FACT-99: please check the logs")]
    for i in range(6):
        messages += tool_round([f"c{i}"], result="x" * 3000)
    tokens = [10] * 8 + [800, 800] * 6
    start = find_tail_start(messages, 200, head_end=1, protect_last_n=3, tokens=tokens)
    assert start <= 7
    assert messages[7]["content"].startswith("[Dana]")


async def test_head_protection_decays_after_first_compaction_11996() -> None:
    """#11996: the first turns are protected once, then summarised like the rest."""
    compressor = ContextCompressor(CONFIG, PerfectSummarizer())
    messages = _chat()
    first = await compressor.compress(messages)
    assert first.messages[1:4] == messages[1:4]
    second = await compressor.compress(first.messages + group_chat(12, start=20, filler=6))
    assert messages[1] not in second.messages
    assert is_summary_text(str(second.messages[1]["content"]))


def test_protect_first_n_counts_non_system_13754() -> None:
    """#13754: without a system prompt, protect_first_n=0 protects nothing, 3 protects three."""
    messages = [user("A", str(i)) for i in range(10)]
    assert head_size(messages, 0, decayed=False) == 0
    assert head_size(messages, 3, decayed=False) == 3
    assert head_size([system(), *messages], 3, decayed=False) == 4


def test_floor_swallows_window_uses_85pct_14690() -> None:
    """#14690: a 64K floor on a 64K window would trigger only at overflow."""
    assert compute_threshold_tokens(64_000, 0.5) == 54_400
    assert compute_threshold_tokens(32_000, 0.5) == 27_200


def test_max_tokens_reserved_43547() -> None:
    """#43547: the reply's max_tokens comes out of the window before the threshold."""
    assert compute_threshold_tokens(200_000, 0.5, max_tokens=65_536) == 67_232


async def test_empty_summary_is_failure_11978() -> None:
    """#11978: a 200 with empty content must not wipe the middle with a bare prefix."""
    result = await ContextCompressor(CONFIG, FixedSummarizer("  ")).compress(_chat())
    assert result.outcome == "fallback"
    assert result.summary and result.summary.strip()


async def test_network_failure_aborts_29559() -> None:
    """#29559: a transient blip must not destroy the middle window."""
    messages = _chat()
    result = await ContextCompressor(CONFIG, FailingSummarizer(ConnectionError())).compress(
        messages
    )
    assert result.outcome == "aborted"
    assert result.messages == messages


async def test_cooldown_reentry_still_aborts_after_network_failure() -> None:
    """Cooldown re-entry (study 3): a second call during the cooldown must not fall back."""
    clock = FakeClock()
    compressor = ContextCompressor(CONFIG, FailingSummarizer(TimeoutError()), clock=clock)
    await compressor.compress(_chat())
    clock.advance(10)
    assert (await compressor.compress(_chat())).outcome == "aborted"


def test_tool_args_truncated_as_valid_json_11762() -> None:
    """#11762: slicing raw JSON left unterminated strings that strict providers reject."""
    args = {"path": "notes.md", "content": "é" * 2000, "lines": [1, 2], "ok": True}
    messages = [*tool_round(["c1"], name="write_file", args=args), user("A", "next")]
    out = prune(messages, tail_start=2)
    shrunk = json.loads(out[0]["tool_calls"][0]["function"]["arguments"])
    assert shrunk["content"].endswith("...[truncated]") and len(shrunk["content"]) < 300
    assert shrunk["lines"] == [1, 2] and shrunk["ok"] is True and shrunk["path"] == "notes.md"


def test_summary_forced_user_after_system_52160() -> None:
    """#52160: Anthropic/Bedrock need a user message right after the system prompt."""
    assert summary_placement([system()], [assistant("reply")]) == ("user", False)
    out = assemble([system()], "BODY", [assistant("reply"), user("A", "q")])
    assert out[1]["role"] == "user"


def test_summary_forced_user_when_no_user_text_survives_58753() -> None:
    """#58753: a transcript with no user query is rejected by vLLM/Qwen templates."""
    head = [system(), assistant("a1")]
    role, _ = summary_placement(head, [assistant("a2")])
    assert role == "user"


def test_end_marker_last_when_merged_56372() -> None:
    """#56372: text after the end marker would read as a fresh message."""
    out = assemble([system(), user("A", "x"), assistant("z")], "BODY", [user("B", "tail ask")])
    content = out[-1]["content"]
    assert content.startswith("[B] tail ask")
    assert content.endswith(SUMMARY_END_MARKER)
    assert content.index(SUMMARY_PREFIX) > content.index("tail ask")


async def test_merged_summary_unwrapped_on_recompaction_47274() -> None:
    """#47274: real content inside a merged summary must survive the next compaction."""
    merged = assemble(
        [system(), user("A", "x"), assistant("z")], "- FACT-7: old", [user("B", "FACT-8: mine")]
    )
    summarizer = PerfectSummarizer()
    await ContextCompressor(CONFIG, summarizer).compress(merged + group_chat(20, start=9, filler=6))
    request = summarizer.requests[0]
    assert "FACT-8: mine" in json.dumps(request.turns)
    assert "FACT-7" in (request.previous_summary or "")


def test_orphan_tool_calls_stripped_51218() -> None:
    """#51218: calls whose results are gone are removed, not stubbed."""
    call = tool_round(["a", "b"])
    messages = [user("A", "go"), call[0], call[1], assistant("done")]  # result of "b" lost
    out = drop_unpaired_tool_messages(messages)
    assert [c["id"] for c in out[1]["tool_calls"]] == ["a"]
    only_orphans = drop_unpaired_tool_messages([user("A", "go"), call[0], assistant("x")])
    assert [m["role"] for m in only_orphans] == ["user", "assistant"]


async def test_stale_previous_summary_discarded_38788() -> None:
    """#38788: a summary from another session must not be injected into this one."""
    state = CompressorState(compression_count=3, previous_summary="- FACT-1: other session")
    summarizer = PerfectSummarizer()
    await ContextCompressor(CONFIG, summarizer, state=state).compress(_chat())
    assert summarizer.requests[0].previous_summary is None


async def test_sentinel_after_compaction_36718() -> None:
    """#36718: right after a compaction, a stale count must not fire another one."""
    compressor = ContextCompressor(CONFIG, PerfectSummarizer())
    compressor.update_from_response({"prompt_tokens": 7_500})
    assert compressor.should_compress()
    await compressor.compress(_chat())
    assert compressor.last_prompt_tokens == -1
    assert not compressor.should_compress()
    compressor.update_from_response({"prompt_tokens": 7_000})
    assert compressor.should_compress()


def test_completion_tokens_never_trigger_12026() -> None:
    """#12026: reasoning models' huge completions are not prompt pressure."""
    compressor = ContextCompressor(CONFIG)
    compressor.update_from_response({"prompt_tokens": 100, "completion_tokens": 50_000})
    assert not compressor.should_compress()


def test_last_visible_reply_in_tail_29824() -> None:
    """#29824: the reply the user just read must not vanish into the summary."""
    messages = [system(), user("A", "q"), assistant("visible answer")]
    for i in range(8):
        messages += tool_round([f"t{i}"])
    start = find_tail_start(messages, 10, head_end=1, protect_last_n=3, tokens=[50] * len(messages))
    assert start <= 2


def test_tail_floor_bounded_at_eight_9413() -> None:
    """#9413: a bounded recent-message floor even when one message blows the budget."""
    messages = [system()] + [user("A", str(i)) for i in range(30)]
    start = find_tail_start(messages, 1, head_end=1, protect_last_n=20, tokens=[500] * 31)
    assert len(messages) - start == 8


async def test_previous_summary_kept_on_abort_57835() -> None:
    """#57835: an aborted compaction must not lose the summary it rehydrated."""
    first = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(_chat())
    compressor = ContextCompressor(
        CONFIG,
        FailingSummarizer(ConnectionError()),
        state=CompressorState(compression_count=1, previous_summary=first.summary),
    )
    grown = first.messages + group_chat(12, start=20, filler=6)
    result = await compressor.compress(grown)
    assert result.outcome == "aborted"
    assert compressor.state.previous_summary == first.summary
    assert result.messages == grown


async def test_window_empty_after_removing_summary_is_noop_59496() -> None:
    """#59496: nothing but an old summary to summarise: skip the summarizer."""
    first = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(_chat())
    summarizer = PerfectSummarizer()
    short = [first.messages[0], first.messages[1], user("A", "hi"), assistant("hey")]
    result = await ContextCompressor(CONFIG, summarizer).compress(short)
    assert result.outcome == "noop"
    assert summarizer.requests == []


async def test_breaker_pause_ends_with_one_probe_14694() -> None:
    """#14694: the breaker pauses, then lets a probe through; it never latches forever."""
    clock = FakeClock()
    compressor = ContextCompressor(CONFIG, PerfectSummarizer(), clock=clock)
    for _ in range(2):
        await compressor.compress(_chat())
        compressor.update_from_response({"prompt_tokens": 7_000})  # still over 6,800
    assert not compressor.should_compress(7_000)
    paused = await compressor.compress(_chat())
    assert paused.outcome == "noop"
    clock.advance(301)
    assert compressor.should_compress(7_000)
    assert (await compressor.compress(_chat())).outcome == "compressed"


async def test_structural_noops_pause_but_never_permanently_93022() -> None:
    """#93022: no-ops on a short chat pause automatic compaction only for a while."""
    clock = FakeClock()
    compressor = ContextCompressor(CONFIG, ScriptedSummarizer("x"), clock=clock)
    short = [system(), user("A", "hi"), assistant("hello")]
    first = await compressor.compress(short)
    second = await compressor.compress(short)
    assert (first.outcome, second.outcome) == ("noop", "noop")
    assert second.paused_until == clock.now + 300
    clock.advance(3601)
    assert compressor.should_compress(7_000)

"""compress(token_counts=...): the store's counts are used; stored text is not re-tokenized."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compactbot.compression import CompressorConfig, ContextCompressor
from compactbot.compression.message_counts import TokenCountsError
from compactbot.compression.tokens import TokenCounter
from tests.compression.scripted import PerfectSummarizer, group_chat, system, tool_round, user

CONFIG = CompressorConfig(context_length=8_000, protect_last_n=6)
LONG_RESULT = "\n".join(f"row {i}: all green, nothing to report" for i in range(40))


class RecordingCounter:
    """A real counter that records every message and text it is asked to count."""

    def __init__(self) -> None:
        self._inner = TokenCounter(None, cache_entries=0)
        self.messages: list[Mapping[str, Any]] = []
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return self._inner.count_text(text)

    def count_message(self, message: Mapping[str, Any]) -> int:
        self.messages.append(message)
        return self._inner.count_message(message)


def _chat() -> list[dict[str, Any]]:
    chat = [system(), *group_chat(14, filler=6)]
    rounds = tool_round(["c1"], name="read_file", args={"path": "a.py"}, result=LONG_RESULT)
    return [*chat[:6], *rounds, *chat[6:], user("Alice", "what did we decide?")]


def _stored_counts(messages: list[dict[str, Any]]) -> list[int]:
    counter = TokenCounter(None, cache_entries=0)
    return [counter.count_message(m) for m in messages]


def _same_values(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a.get(k) is b.get(k) for k in ("content", "tool_calls", "name", "tool_call_id"))


async def test_stored_messages_are_not_tokenized_when_counts_are_given() -> None:
    chat = _chat()
    counter = RecordingCounter()
    compressor = ContextCompressor(CONFIG, PerfectSummarizer(), counter=counter)
    result = await compressor.compress(chat, token_counts=_stored_counts(chat))
    assert result.outcome == "compressed"
    recounted = [m for m in counter.messages if any(_same_values(m, s) for s in chat)]
    assert recounted == []
    # What it did count is new text only: the summary, the noted prompt, the pruned result.
    assert 0 < len(counter.messages) <= 4


async def test_without_counts_the_result_is_the_same_and_every_message_counted() -> None:
    chat = _chat()
    counted = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(chat)
    given = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(
        chat, token_counts=_stored_counts(chat)
    )
    assert given.messages == counted.messages
    assert given.tokens_after == counted.tokens_after
    assert counted.tokens_before == given.tokens_before


async def test_the_callers_counts_are_the_ones_used() -> None:
    chat = _chat()
    doubled = [2 * n for n in _stored_counts(chat)]
    result = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(
        chat, token_counts=doubled
    )
    assert result.tokens_before == sum(doubled)


@pytest.mark.parametrize(
    "counts",
    [lambda n: [1] * (n - 1), lambda n: [1] * (n - 1) + [-1], lambda n: [True] * n],
    ids=["too_short", "negative", "bool"],
)
async def test_counts_that_do_not_fit_are_refused_and_change_nothing(counts: Any) -> None:
    chat = _chat()
    compressor = ContextCompressor(CONFIG, PerfectSummarizer())
    before = compressor.state
    with pytest.raises(TokenCountsError):
        await compressor.compress(chat, token_counts=counts(len(chat)))
    assert compressor.state == before


async def test_a_pruned_result_in_the_middle_is_estimated_not_tokenized() -> None:
    chat = _chat()
    counter = RecordingCounter()
    compressor = ContextCompressor(CONFIG, PerfectSummarizer(), counter=counter)
    result = await compressor.compress(chat, token_counts=_stored_counts(chat))
    assert result.outcome == "compressed"
    # The read_file result is summarised, so only its one-line description is shown: never
    # kept, it is not worth the tokenizer.
    assert not any(m.get("role") == "tool" for m in counter.messages)


def test_an_estimate_reads_every_counted_part_of_a_message() -> None:
    from compactbot.compression.message_counts import estimated_count, summarised_tokens

    call = {"id": "c1", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
    message = {"role": "assistant", "content": "x" * 40, "tool_calls": [call]}
    envelope = len(json.dumps(call, ensure_ascii=False, sort_keys=True))  # what is counted
    assert estimated_count(message, {"": 4.0}) == 4 + round((40 + envelope) / 4)
    tool = {"role": "tool", "tool_call_id": "c1", "content": ""}
    assert estimated_count(tool, {"": 2.0}) == 5
    assert estimated_count(tool, {"tool": 1.0, "": 2.0}) == 6  # the role's own density
    messages = [message] * 3
    estimate = estimated_count(message, {"": 4.0})
    assert summarised_tokens(messages, [100, 100, 100], 0, 2, [1, 2]) == 100 + estimate


@pytest.mark.parametrize("seed", (1, 2, 3, 4, 5))
@pytest.mark.parametrize("carrying_a_summary", (False, True))
async def test_without_counts_the_same_messages_are_kept(
    seed: int, carrying_a_summary: bool
) -> None:
    from tests.compression.seeded_chats import seeded_chat

    config = CompressorConfig(context_length=8_192, protect_first_n=2, protect_last_n=4)
    chat = seeded_chat(seed)
    if carrying_a_summary:  # a summary in the transcript: the handoff's own counts
        first = await ContextCompressor(config, PerfectSummarizer()).compress(chat, force=True)
        chat = [*first.messages, *seeded_chat(seed + 100)[1:]]
    given = await ContextCompressor(config, PerfectSummarizer()).compress(
        chat, force=True, token_counts=_stored_counts(chat)
    )
    counted = await ContextCompressor(config, PerfectSummarizer()).compress(chat, force=True)
    assert given.outcome == counted.outcome
    assert given.outcome in ("compressed", "fallback")
    assert given.messages_summarised == counted.messages_summarised
    # Counting every message gives the store's counts: the same head, tail and sizes.
    kept = [m for m in given.messages if "[CONTEXT COMPACTION" not in str(m.get("content"))]
    again = [m for m in counted.messages if "[CONTEXT COMPACTION" not in str(m.get("content"))]
    assert kept[1:] == again[1:]
    assert counted.tokens_before == given.tokens_before


@given(
    st.text(max_size=30),
    st.text(max_size=200),
    st.text(alphabet="abc_123", min_size=1, max_size=12),
)
def test_a_calls_characters_are_those_of_the_json_that_is_counted(
    name: str, arguments: str, ident: str
) -> None:
    from compactbot.compression.message_counts import message_chars

    call = {"id": ident, "type": "function", "function": {"name": name, "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    assert message_chars(message) == len(json.dumps(call, ensure_ascii=False, sort_keys=True))


async def test_tokens_after_is_exact_when_assembly_changes_kept_messages() -> None:
    """Images stubbed and calls cut down in the kept tail: those are counted afresh, the rest
    taken from the store, and the sum is the output's own count."""
    from tests.compression.scripted import image_user

    half_answered = tool_round(["c1", "c2"], result="x")[:2]  # c2 has no result
    tail = [image_user("Ana", "old"), *half_answered, user("Bob", "ok"), image_user("Cy", "new")]
    chat = [*_chat(), *tail]
    counts = _stored_counts(chat)
    result = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(
        chat, token_counts=counts
    )
    assert result.outcome == "compressed"
    assert any("stripped" in json.dumps(m) for m in result.messages)
    fresh = TokenCounter(None, cache_entries=0)
    assert result.tokens_after == sum(fresh.count_message(m) for m in result.messages)

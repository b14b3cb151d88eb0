"""compress(token_counts=...): the store's counts are used; stored text is not re-tokenized."""

from __future__ import annotations

import json
from collections import Counter
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


async def test_without_counts_what_is_kept_is_counted_once_and_the_middle_on_a_sample() -> None:
    from compactbot.compression.lazy_counts import DENSITY_SAMPLES
    from tests.compression.seeded_chats import seeded_chat

    chat = seeded_chat(7, turns=400)
    counter = RecordingCounter()
    config = CompressorConfig(context_length=8_192, protect_first_n=2, protect_last_n=4)
    result = await ContextCompressor(config, None, counter=counter).compress(chat, force=True)
    assert result.changed
    copies = Counter(
        index for m in counter.messages for index, s in enumerate(chat) if _same_values(m, s)
    )
    assert set(copies.values()) == {1}
    kept = {index for m in result.messages for index, s in enumerate(chat) if _same_values(m, s)}
    assert kept <= set(copies)
    # Past what is kept (and what the tail's walk reads beyond it, up to half as much again),
    # only a sample of the middle is tokenized, for its densities; the rest is estimated.
    assert len(copies) - len(kept) <= len(kept) + DENSITY_SAMPLES
    assert len(copies) < len(chat) / 4


async def test_without_counts_the_result_is_the_same_and_the_input_estimated() -> None:
    chat = _chat()
    counted = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(chat)
    given = await ContextCompressor(CONFIG, PerfectSummarizer()).compress(
        chat, token_counts=_stored_counts(chat)
    )
    assert given.messages == counted.messages
    assert given.tokens_after == counted.tokens_after
    assert abs(counted.tokens_before - given.tokens_before) <= 0.1 * given.tokens_before


async def test_without_counts_a_close_call_is_counted_exactly() -> None:
    from compactbot.compression.lazy_counts import LazyCounts, tokens_before

    chat = _chat()
    exact = sum(_stored_counts(chat))
    counter = TokenCounter(None, cache_entries=0)
    lazy = LazyCounts(chat, lambda i: counter.count_message(chat[i]))
    lazy[len(chat) - 1]  # one message read, the others only estimated
    estimate = lazy.estimated_total()
    assert estimate != exact
    assert tokens_before(lazy, 1) == estimate
    assert tokens_before(lazy, estimate) == exact  # as large as the input: was anything saved?


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
    from compactbot.compression.lazy_counts import estimated_count
    from compactbot.compression.message_counts import summarised_tokens

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


def test_a_message_estimated_then_counted_is_summed_once() -> None:
    from compactbot.compression.lazy_counts import LazyCounts

    chat = _chat()
    counter = TokenCounter(None, cache_entries=0)
    lazy = LazyCounts(chat, lambda i: counter.count_message(chat[i]))
    lazy[0]
    densities = {"": lazy.chars_per_token()}
    estimates = [lazy.known_or_estimated(i, densities) for i in range(len(chat))]
    assert lazy.estimated_total() == sum(estimates)
    lazy[3]  # estimated above, counted now
    assert lazy.estimated_total() == sum(estimates) - estimates[3] + lazy[3]
    assert lazy[:] == _stored_counts(chat) and lazy.exact_total() == sum(_stored_counts(chat))


def test_a_range_is_summed_as_message_by_message() -> None:
    from compactbot.compression.lazy_counts import LazyCounts

    chat = _chat()
    counter = TokenCounter(None, cache_entries=0)
    one, other = (LazyCounts(chat, lambda i: counter.count_message(chat[i])) for _ in "ab")
    for lazy in (one, other):
        lazy[2], lazy[len(chat) - 1]
    densities = one.densities()
    skip = {4, 5}
    start, end = 1, len(chat) - 1
    expected = sum(one.known_or_estimated(i, densities) for i in range(start, end) if i not in skip)
    assert other.range_total(start, end, densities, skip) == expected
    assert other.estimated_total() == one.estimated_total()  # the same estimates were kept


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
    # Head and tail are the same messages; only the summary's budget came from an estimate.
    kept = [m for m in given.messages if "[CONTEXT COMPACTION" not in str(m.get("content"))]
    again = [m for m in counted.messages if "[CONTEXT COMPACTION" not in str(m.get("content"))]
    assert kept[1:] == again[1:]
    # An estimate at each role's density, measured on the tail and a sample of the middle:
    # these chats mix secrets, JSON calls, long and non-ASCII texts (the tail's density alone
    # was up to 15 % off).
    assert abs(counted.tokens_before - given.tokens_before) <= 0.1 * given.tokens_before


@given(
    st.text(max_size=30),
    st.text(max_size=200),
    st.text(alphabet="abc_123", min_size=1, max_size=12),
)
def test_a_calls_characters_are_those_of_the_json_that_is_counted(
    name: str, arguments: str, ident: str
) -> None:
    from compactbot.compression.lazy_counts import message_chars

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

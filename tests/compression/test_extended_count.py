"""The noted system prompt is counted from its stored count: exact, without encoding it again."""

from __future__ import annotations

import random
from typing import Any

import pytest

from compactbot.compression import CompressorConfig, ContextCompressor
from compactbot.compression.assemble import COMPACTION_NOTE
from compactbot.compression.tokens import TokenCounter, last_piece
from tests.compression.scripted import PerfectSummarizer, group_chat, system

CONFIG = CompressorConfig(context_length=8_000, protect_last_n=6)
# Letters, digits, ASCII punctuation, apostrophes, spaces, tabs, line breaks, other scripts.
PIECES = [*"abcXYZ019 .,;:!?'\"()[]{}<>/-_*#\n\t", "é", "日", "🙂", "  ", "'s", "'ll", "\r\n"]
SUFFIXES = ["\n\n" + COMPACTION_NOTE, "\n", "\r\nx", "\n/x", "\n\n\n a", "\n'.s"]


class RecordingTokenCounter(TokenCounter):
    """The built-in counter, recording every text it encodes."""

    def __init__(self) -> None:
        super().__init__(None, cache_entries=0)
        self.texts: list[str] = []

    def count_text(self, text: str) -> int:
        self.texts.append(text)
        return super().count_text(text)


@pytest.mark.parametrize("model", [None, "gpt-4"], ids=["o200k_base", "cl100k_base"])
def test_an_extended_count_equals_counting_the_whole_text(model: str | None) -> None:
    counter = TokenCounter(model, cache_entries=0)
    rng = random.Random(7)
    shortcut = 0
    for _ in range(4_000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 14)))
        suffix = rng.choice(SUFFIXES)
        shortcut += last_piece(text) is not None
        whole = counter.count_text(text + suffix)
        assert counter.count_extended(text, counter.count_text(text), suffix) == whole, (
            text,
            suffix,
        )
    assert shortcut > 1_000  # the shortcut itself was checked, not only the fallback


@pytest.mark.parametrize(
    "prompt",
    ["You are a helpful bot", "You are a bot.", "Be kind (always).", "Be kind \n", "日本語"],
)
async def test_the_result_counts_the_noted_prompt_exactly(prompt: str) -> None:
    chat = [system(prompt), *group_chat(14, filler=6)]
    counts = [TokenCounter(None, cache_entries=0).count_message(m) for m in chat]
    compressor = ContextCompressor(CONFIG, PerfectSummarizer())
    result = await compressor.compress(chat, token_counts=counts)
    assert result.outcome == "compressed"
    assert COMPACTION_NOTE in result.messages[0]["content"]
    fresh = TokenCounter(None, cache_entries=0)
    assert result.tokens_after == sum(fresh.count_message(m) for m in result.messages)


async def test_the_stored_prompt_is_not_encoded_again() -> None:
    prompt = "You are a helpful bot in a group chat. " * 40 + "Answer briefly."
    chat: list[dict[str, Any]] = [system(prompt), *group_chat(14, filler=6)]
    counts = [TokenCounter(None, cache_entries=0).count_message(m) for m in chat]
    counter = RecordingTokenCounter()
    result = await ContextCompressor(CONFIG, PerfectSummarizer(), counter=counter).compress(
        chat, token_counts=counts
    )
    assert result.outcome == "compressed"
    assert not [text for text in counter.texts if prompt in text]

"""A compaction of a long chat leaves the event loop free for every other chat (SPEC 17)."""

from __future__ import annotations

from bench.loop_stall import with_ticker
from compactbot.compression import CompressorConfig, ContextCompressor
from tests.compression.scripted import PerfectSummarizer
from tests.compression.seeded_chats import seeded_chat

# The bench reports the real figure (20 ms is the design bound). This catches a compaction that
# holds the loop for its whole run (1.6 s at this size) with room for what a busy 2-core machine
# and the garbage collector add to any one gap.
LONGEST_STALL_SECONDS = 0.5
CONFIG = CompressorConfig(context_length=32_000)


async def test_an_offline_compaction_of_3000_messages_never_holds_the_loop() -> None:
    chat = seeded_chat(7, turns=3_000)
    compressor = ContextCompressor(CONFIG)
    await compressor.compress(seeded_chat(9, turns=10))  # the tokenizer loaded, as at start-up
    result, _, stall = await with_ticker(lambda: compressor.compress(chat))
    assert result.outcome in ("compressed", "fallback")  # the scripted model is not perfect here
    assert stall < LONGEST_STALL_SECONDS


async def test_a_summarizer_compaction_of_3000_messages_never_holds_the_loop() -> None:
    chat = seeded_chat(8, turns=3_000)
    compressor = ContextCompressor(CONFIG, PerfectSummarizer())
    await compressor.compress(seeded_chat(9, turns=10))  # the tokenizer loaded
    result, _, stall = await with_ticker(lambda: compressor.compress(chat))
    assert result.outcome in ("compressed", "fallback")  # the scripted model is not perfect here
    assert stall < LONGEST_STALL_SECONDS

"""Issue 37: the memory is rendered by importance, with a guarantee (SPEC 6.11)."""

from __future__ import annotations

import pytest

from compactbot.compression import CompressorConfig, ContextCompressor
from tests.compression.labelled_session import PREFERENCES, RULES, chatter, labelled_session
from tests.compression.scripted import FakeClock


@pytest.mark.parametrize("window", [16_000, 8_000])
@pytest.mark.parametrize("said_between_rounds", [0, 6])
async def test_labelled_session_keeps_every_rule_and_preference_through_five_forced_rounds(
    window: int, said_between_rounds: int
) -> None:
    compressor = ContextCompressor(CompressorConfig(context_length=window), clock=FakeClock())
    transcript = labelled_session()
    compacted = 0
    for round_ in range(5):
        # Each round compacts the previous round's output (and what was said since).
        result = await compressor.compress(transcript, force=True)
        assert result.outcome in ("compressed", "noop"), (round_, result.error)
        compacted += result.outcome == "compressed"
        assert result.must_show_hidden == 0
        context = "\n".join(str(m.get("content")) for m in result.messages)
        for item in (*RULES, *PREFERENCES):
            assert item in context, (window, round_, item)
        transcript = [*result.messages, *chatter(1_000 + 40 * round_, said_between_rounds)]
    assert compacted >= 4

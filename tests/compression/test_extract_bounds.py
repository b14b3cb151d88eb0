"""The extractor reads every message cheaply and keeps what matters, not what chatter says."""

from __future__ import annotations

import datetime as dt
import gc
import json
import os
import tracemalloc
from typing import Any

from compactbot.compression import CompressorConfig, ContextCompressor
from compactbot.compression.extract import (
    DONE_TOOL_CALLS_PER_SPAN,
    extract_update,
    too_light_for_backup,
)
from compactbot.compression.features import message_features

TODAY = dt.date(2026, 12, 1)
# Long unpunctuated chatter: a weekday, "is", "will", "please", "need" and no owner or value.
CHATTER = (
    "the deploy window is thursday because staging still fails the smoke tests and who will "
    "bring the projector cables please check the budget sheet we need the new certificate "
    "before anyone touches production again lunch is at noon near the station coffee after "
    "the retro the mobile build passed on android but crashed twice on older phones"
)


def _extract(turns: list[dict[str, Any]]) -> list[tuple[str, str]]:
    ids = [f"m{i}" for i in range(len(turns))]
    update = extract_update(turns, ids, [None] * len(turns), today=TODAY)
    return [(e.kind, e.text) for e in update.additions]


def _call(number: int, path: str) -> list[dict[str, Any]]:
    call_id = f"call_{number}"
    arguments = json.dumps({"path": path})
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "read_file", "arguments": arguments},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": f"contents of {path}"},
    ]


def test_long_chatter_with_a_weekday_or_an_unowned_please_yields_no_entry() -> None:
    features = message_features(CHATTER, True)
    assert features.candidates == ()
    assert too_light_for_backup({"role": "user", "content": CHATTER})


def test_a_short_statement_of_a_day_and_an_owned_action_are_still_entries() -> None:
    kinds = _extract(
        [
            {"role": "user", "content": "[Ben] The deploy day is Tuesday."},
            {"role": "user", "content": "[Ana] Bob, please book the room by Friday."},
            {"role": "user", "content": "[Ana] I'll send the invoice tomorrow."},
        ]
    )
    assert ("fact", "The deploy day is Tuesday.") in kinds
    actions = [text for kind, text in kinds if kind == "action"]
    assert actions == ["Bob, please book the room by Friday.", "I'll send the invoice tomorrow."]


def test_a_long_span_keeps_its_newest_routine_tool_calls_and_every_failed_one() -> None:
    turns: list[dict[str, Any]] = []
    for number in range(40):
        turns += _call(number, f"src/module_{number}.py")
    failed = _call(99, "src/broken.py")
    failed[1]["content"] = "Traceback: error reading src/broken.py"
    turns = failed + turns
    tools = [text for kind, text in _extract(turns) if kind == "tool"]
    assert len(tools) == DONE_TOOL_CALLS_PER_SPAN + 1
    assert any("broken.py" in text and "failed" in text for text in tools)
    assert any("module_39.py" in text for text in tools)
    assert not any("module_0.py" in text for text in tools)


def _chatter_chat() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are helpful."}]
    for i in range(3_000):
        words = CHATTER.split()
        text = " ".join(words[i % 7 :] + words[: i % 7])  # every text distinct
        messages.append({"role": "user", "content": f"[P{i % 6}] {text}"})
        messages.append({"role": "assistant", "content": f"noted {text[:200]}"})
    messages.append({"role": "user", "content": "[P0] and now?"})
    return messages


async def test_a_long_chatter_span_gives_a_small_memory_and_nothing_outlives_the_call() -> None:
    messages = _chatter_chat()
    compressor = ContextCompressor(CompressorConfig(context_length=64_000), None)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    result = await compressor.compress(messages)
    assert result.outcome == "compressed" and result.memory is not None
    kinds = [entry.kind for entry in result.memory.entries]
    assert len(kinds) <= 6 + 1 + 1  # participants, the latest ask, at most a stray line
    del result, compressor
    gc.collect()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    # What compression/ allocated and still holds: other threads (an earlier test's servers,
    # the executor starting its workers) allocate meanwhile, and are not this call's.
    ours = [tracemalloc.Filter(True, f"*{os.sep}compression{os.sep}*")]
    growth = after.filter_traces(ours).compare_to(before.filter_traces(ours), "filename")
    retained = sum(stat.size_diff for stat in growth)
    assert retained < 200_000  # no per-call memo or copy survives the call


def test_a_chunk_named_by_its_view_reads_the_same_without_its_openings() -> None:
    from compactbot.compression.summary_chunks import summary_chunks
    from tests.compression.seeded_chats import seeded_chat

    for seed in (1, 2, 3):
        chunks = summary_chunks(seeded_chat(seed), 4_000)
        for chunk in chunks:
            ids = [f"m{i}" for i in range(len(chunk.turns))]
            read = [
                extract_update(
                    chunk.turns,
                    ids,
                    [None] * len(ids),
                    today=TODAY,
                    min_weight=3,
                    speakers=chunk.participants,
                    all_named=all_named,
                )
                for all_named in (False, True)
            ]
            assert read[0] == read[1]
            assert {e.text for e in read[1].additions if e.kind == "participant"} == set(
                chunk.participants
            )

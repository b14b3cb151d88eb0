"""Property tests over random group-chat histories (SPEC 13): every output stays valid."""

from __future__ import annotations

import copy
import itertools
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from compactbot.compression import CompressionResult, CompressorConfig, ContextCompressor
from compactbot.compression.assemble import summary_content
from compactbot.compression.messages import is_real_user_message, last_index, role_of, text_of
from compactbot.compression.template import (
    SUMMARY_END_MARKER,
    is_summary_text,
    merge_into,
    wrap_summary,
)
from tests.compression.scripted import PerfectSummarizer

NAMES = ("Alice", "Bob", "Carol", "Dmitri")
PHRASES = (
    "FACT-1: the deadline is 2026-12-01. ",
    "let's go with the blue option. ",
    "never post the invite link publicly. ",
    "ok ",
    "the build on main failed again with exit code 2. ",
    "Ça marche, on se voit à 18h. ",
)
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}}
SETTINGS = settings(
    max_examples=1000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@st.composite
def _text(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(PHRASES)) * draw(st.integers(1, 40))


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    ids = itertools.count()
    out: list[dict[str, Any]] = []
    if draw(st.booleans()):
        prompt = "You are the chat's helpful bot."
        out.append(
            {
                "role": "system",
                "content": prompt if draw(st.booleans()) else [{"type": "text", "text": prompt}],
            }
        )
    summary_at = draw(st.sampled_from(("none", "none", "standalone", "merged")))
    if summary_at == "standalone":
        out.append(
            {
                "role": draw(st.sampled_from(("user", "assistant"))),
                "content": summary_content("- FACT-0: earlier summary fact"),
            }
        )
    elif summary_at == "merged":
        out.append(
            {
                "role": "user",
                "content": merge_into(
                    "[Erin] an ask that got a summary merged in",
                    wrap_summary("- FACT-0: merged fact"),
                ),
            }
        )
    kinds = st.sampled_from(("user", "user", "assistant", "tools", "image", "parts", "blank"))
    for kind in draw(st.lists(kinds, min_size=3, max_size=30)):
        name = draw(st.sampled_from(NAMES))
        if kind == "user":
            out.append({"role": "user", "content": f"[{name}] {draw(_text())}"})
        elif kind == "image":
            out.append(
                {"role": "user", "content": [{"type": "text", "text": f"[{name}] look"}, IMAGE]}
            )
        elif kind == "parts":
            out.append(
                {"role": "user", "content": [{"type": "text", "text": f"[{name}] {draw(_text())}"}]}
            )
        elif kind == "assistant":
            out.append({"role": "assistant", "content": draw(_text())})
        elif kind == "blank":
            out.append({"role": "user", "content": "  "})
        else:
            out += _tool_group(draw, ids)
    return out


def _tool_group(draw: st.DrawFn, ids: itertools.count[int]) -> list[dict[str, Any]]:
    calls = [f"call_{next(ids)}" for _ in range(draw(st.integers(1, 3)))]
    argument = "x" * draw(st.sampled_from((5, 700)))
    text = draw(st.sampled_from((None, "", "Let me check.")))
    group: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": text,
            "tool_calls": [
                {
                    "id": c,
                    "type": "function",
                    "function": {"name": "terminal", "arguments": f'{{"command": "{argument}"}}'},
                }
                for c in calls
            ],
        }
    ]
    for c in calls:
        group.append(
            {
                "role": "tool",
                "tool_call_id": c,
                "content": draw(st.sampled_from(("ok", "line\n" * 80, "dup " * 90))),
            }
        )
    return group


configs = st.builds(
    CompressorConfig,
    context_length=st.just(8_000),
    protect_first_n=st.integers(0, 3),
    protect_last_n=st.integers(0, 20),
)


def _check(before: list[dict[str, Any]], result: CompressionResult) -> None:
    out = result.messages
    if result.outcome in ("noop", "aborted"):
        assert out == before
        return
    assert result.tokens_after < result.tokens_before
    systems = [i for i, m in enumerate(out) if role_of(m) == "system"]
    assert systems in ([], [0])
    summaries = [i for i, m in enumerate(out) if i not in systems and is_summary_text(text_of(m))]
    assert len(summaries) == 1
    index = summaries[0]
    assert text_of(out[index]).rstrip().endswith(SUMMARY_END_MARKER)
    if index + 1 < len(out) and not out[index].get("tool_calls"):
        # Merged into a tool-calling assistant, its own results follow it (checked below).
        assert role_of(out[index + 1]) != "tool"
    if index == len(systems):
        assert role_of(out[index]) == "user"
    assert any(role_of(m) == "user" for m in out)
    _check_tool_pairs(out)
    _check_last_ask_kept(before, out)


def _check_tool_pairs(out: list[dict[str, Any]]) -> None:
    seen_results = 0
    for i, message in enumerate(out):
        calls = message.get("tool_calls") or []
        if calls:
            ids = [c["id"] for c in calls]
            following = out[i + 1 : i + 1 + len(ids)]
            assert [m.get("tool_call_id") for m in following] == ids
            assert all(role_of(m) == "tool" for m in following)
        if role_of(message) == "tool":
            seen_results += 1
    called = sum(len(m.get("tool_calls") or []) for m in out)
    assert seen_results == called


def _check_last_ask_kept(before: list[dict[str, Any]], out: list[dict[str, Any]]) -> None:
    last = last_index(before, is_real_user_message)
    if last < 0:
        return
    ask = before[last]
    if ask in out:
        return
    # Merged on a double role collision: its own text comes first, unchanged.
    merged = [m for m in out if role_of(m) == "user" and is_summary_text(text_of(m))]
    assert merged, "last real user message lost"
    content = merged[0]["content"]
    if isinstance(ask["content"], str):
        assert content.startswith(ask["content"])
    else:
        assert content[: len(ask["content"])] == ask["content"]


@SETTINGS
@given(messages=histories(), config=configs)
async def test_random_histories_stay_valid_with_scripted_summarizer(
    messages: list[dict[str, Any]], config: CompressorConfig
) -> None:
    before = copy.deepcopy(messages)
    result = await ContextCompressor(config, PerfectSummarizer()).compress(messages)
    assert messages == before
    event(result.outcome)
    _check(before, result)


@SETTINGS
@given(messages=histories(), config=configs)
async def test_random_histories_stay_valid_without_summarizer(
    messages: list[dict[str, Any]], config: CompressorConfig
) -> None:
    before = copy.deepcopy(messages)
    result = await ContextCompressor(config).compress(messages, force=True)
    assert messages == before
    event(result.outcome)
    _check(before, result)

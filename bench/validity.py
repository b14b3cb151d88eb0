"""Structural checks on every compressor output (anchors C2), as in the property tests.

Copied logic, not imported from tests/: the bench must run without the test tree.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from compactbot.compression import CompressionResult
from compactbot.compression.messages import is_real_user_message, last_index, role_of, text_of
from compactbot.compression.template import SUMMARY_END_MARKER, is_summary_text

Messages = Sequence[Mapping[str, Any]]


def violations(before: Messages, result: CompressionResult) -> list[str]:
    """Every broken invariant of one compress() result; empty when valid."""
    out = result.messages
    if result.outcome in ("noop", "aborted"):
        return [] if list(out) == list(before) else ["unchanged outcome changed the messages"]
    problems: list[str] = []
    if result.tokens_after >= result.tokens_before:
        problems.append("tokens did not decrease")
    problems += transcript_violations(out)
    systems = [i for i, m in enumerate(out) if role_of(m) == "system"]
    summaries = [i for i, m in enumerate(out) if i not in systems and is_summary_text(text_of(m))]
    if len(summaries) != 1:
        problems.append(f"{len(summaries)} summaries instead of one")
        return problems
    index = summaries[0]
    if not text_of(out[index]).rstrip().endswith(SUMMARY_END_MARKER):
        problems.append("summary without its end marker")
    if (
        index + 1 < len(out)
        and not out[index].get("tool_calls")
        and role_of(out[index + 1]) == "tool"
    ):
        problems.append("tool result right after the summary")
    if index == len(systems) and role_of(out[index]) != "user":
        problems.append("first message after the system prompt is not a user message")
    problems += _last_ask_kept(before, out)
    return problems


def transcript_violations(out: Messages) -> list[str]:
    """Invariants any transcript sent to a provider must hold (also for the baselines)."""
    problems: list[str] = []
    systems = [i for i, m in enumerate(out) if role_of(m) == "system"]
    if systems not in ([], [0]):
        problems.append(f"system messages at {systems[:5]}")
    if not any(role_of(m) == "user" for m in out):
        problems.append("no user message")
    for m in out:
        if role_of(m) not in ("system", "user", "assistant", "tool"):
            problems.append(f"bad role {role_of(m)!r}")
        if any(str(key).startswith("_") for key in m):
            problems.append("internal key on the wire")
        if role_of(m) in ("user", "tool") and not text_of(m).strip():
            problems.append(f"empty {role_of(m)} content")
    problems += _tool_pairs(out)
    return problems


def _tool_pairs(out: Messages) -> list[str]:
    problems: list[str] = []
    results = 0
    for i, message in enumerate(out):
        calls = message.get("tool_calls") or []
        if calls:
            ids = [c["id"] for c in calls]
            following = out[i + 1 : i + 1 + len(ids)]
            if [m.get("tool_call_id") for m in following] != ids or not all(
                role_of(m) == "tool" for m in following
            ):
                problems.append(f"tool calls at {i} without their results")
            for call in calls:
                try:
                    json.loads(call["function"]["arguments"])
                except (KeyError, TypeError, ValueError):
                    problems.append(f"tool call arguments at {i} are not JSON")
        if role_of(message) == "tool":
            results += 1
    called = sum(len(m.get("tool_calls") or []) for m in out)
    if results != called:
        problems.append(f"{results} tool results for {called} calls")
    return problems


def _last_ask_kept(before: Messages, out: Messages) -> list[str]:
    last = last_index(before, is_real_user_message)
    if last < 0:
        return []
    ask = before[last]
    if ask in out:
        return []
    merged = [m for m in out if role_of(m) == "user" and is_summary_text(text_of(m))]
    if not merged:
        return ["last real user message lost"]
    content = merged[0]["content"]
    if isinstance(ask["content"], str):
        ok = isinstance(content, str) and content.startswith(ask["content"])
    else:
        ok = content[: len(ask["content"])] == ask["content"]
    return [] if ok else ["last real user message changed"]

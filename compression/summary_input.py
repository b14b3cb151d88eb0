"""What a summarizer gets to read: redacted, truncated, bounded copies of the turns to summarise."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from compactbot.compression.redact import redact, redact_value
from compactbot.compression.transcript import content_text, render_turns, split_speaker, strip_think

__all__ = ["chunk_turns", "derive_focus", "participants", "render_turns", "summary_turns"]

# Per-message bound (Hermes' numbers): a body over the limit keeps its head and its tail.
BODY_LIMIT_CHARS = 6_000
BODY_HEAD_CHARS = 4_000
BODY_TAIL_CHARS = 1_500
TRUNCATION_MARK = "\n…[truncated]…\n"
TOOL_ARGS_LIMIT_CHARS = 1_500
# render_turns() puts a line break between turns.
TURN_SEPARATOR_CHARS = 1
TOOL_NAME_SLACK_CHARS = 64
FOCUS_MESSAGES = 3
FOCUS_MESSAGE_CHARS = 260
FOCUS_TOTAL_CHARS = 700


def summary_turns(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Redacted, per-message truncated copies of every message: nothing is left out."""
    prepared: dict[tuple[str, bool], str] = {}  # this call's texts only: nothing outlives it
    return [_prepare(message, prepared) for message in messages]


def chunk_turns(turns: Sequence[dict[str, Any]], max_chars: int) -> list[list[dict[str, Any]]]:
    """Consecutive chunks of `turns`, each within `max_chars` rendered (SPEC 6.5).

    A single turn larger than the bound keeps its tail.
    """
    chunks: list[list[dict[str, Any]]] = []
    current: list[dict[str, Any]] = []
    used = 0
    for turn in turns:
        size = rendered_chars(turn)
        if current and used + size > max_chars:
            chunks.append(current)
            current, used = [], 0
        if size > max_chars:
            turn = shrink_to(turn, max_chars)
            size = rendered_chars(turn)
        current.append(turn)
        used += size
    if current:
        chunks.append(current)
    return chunks


def _genuine_text(message: Mapping[str, Any]) -> str:
    """The message's own text: earlier summaries were taken out by `take_handoffs` already."""
    return content_text(message.get("content"))


def _prepare(message: Mapping[str, Any], prepared: dict[tuple[str, bool], str]) -> dict[str, Any]:
    turn = {key: value for key, value in message.items() if key != "tool_calls"}
    key = (_genuine_text(message), message.get("role") == "assistant")
    text = prepared.get(key)
    turn["content"] = prepared[key] = _prepared_text(*key) if text is None else text
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        turn["tool_calls"] = [prepare_call(call) for call in calls]
    return turn


def _prepared_text(text: str, assistant: bool) -> str:
    """Redacted (through the call's redaction memo) and truncated."""
    return truncate_body(redact(strip_think(text) if assistant else text))


def prepare_call(call: Any, clean: bool = False) -> Any:
    """The summarizer's copy of a tool call; `clean`: its arguments are known to need no
    redaction (CALLS_CLEAN)."""
    if type(call) is not dict and not isinstance(call, Mapping):
        return call
    function = call.get("function")
    if clean and type(function) is dict:
        arguments = function.get("arguments")
        if type(arguments) is str and len(arguments) <= TOOL_ARGS_LIMIT_CHARS:
            return call  # nothing to redact or shorten: the summarizer reads the call itself
    copy = dict(call)
    if isinstance(function, Mapping):
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            arguments = shorten_arguments(arguments if clean else redact_value(arguments))
        copy["function"] = {**function, "arguments": arguments}
    return copy


def truncate_body(text: str) -> str:
    if len(text) <= BODY_LIMIT_CHARS:
        return text
    return text[:BODY_HEAD_CHARS] + TRUNCATION_MARK + text[-BODY_TAIL_CHARS:]


def shorten_arguments(arguments: str, limit: int = TOOL_ARGS_LIMIT_CHARS) -> str:
    """Tool-call arguments within `limit` chars, shortened inside the JSON so it stays JSON."""
    if len(arguments) <= limit:
        return arguments
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return json.dumps(arguments[: limit - 100] + "…[truncated]", ensure_ascii=False)
    string_limit, item_limit = limit, 50
    while string_limit >= 16:
        text = json.dumps(_shrink(parsed, string_limit, item_limit), ensure_ascii=False)
        if len(text) <= limit:
            return text
        string_limit, item_limit = string_limit // 2, max(1, item_limit // 2)
    return json.dumps({"truncated_arguments": arguments[: limit - 100]}, ensure_ascii=False)


def _shrink(value: Any, string_limit: int, item_limit: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= string_limit else value[:string_limit] + "…[truncated]"
    if isinstance(value, list):
        kept = [_shrink(item, string_limit, item_limit) for item in value[:item_limit]]
        if len(value) > item_limit:
            kept.append(f"…[{len(value) - item_limit} more items]")
        return kept
    if isinstance(value, dict):
        return {key: _shrink(item, string_limit, item_limit) for key, item in value.items()}
    return value


def shrink_to(turn: Mapping[str, Any], room: int) -> dict[str, Any]:
    """A single turn bigger than the whole bound keeps as much of its text's tail as fits."""
    overflow = rendered_chars(turn) - max(room, 0)
    text = turn.get("content") or ""
    # A member's turn keeps its "[Name] ": the speaker is a field of its record (SPEC 16).
    name, body = split_speaker(text) if turn.get("role") == "user" else (None, text)
    head = f"[{name}] " if name else ""
    keep = max(len(text) - overflow - len(TRUNCATION_MARK) - len(head), 0)
    shrunk = {key: value for key, value in turn.items() if key != "tool_calls"}
    shrunk["content"] = head + TRUNCATION_MARK.strip() + body[len(body) - keep :]
    return shrunk


def rendered_chars(turn: Mapping[str, Any]) -> int:
    # A tool result rendered alone cannot see its call's name; reserve room for it.
    slack = TOOL_NAME_SLACK_CHARS if turn.get("role") == "tool" else 0
    return len(render_turns([turn])) + TURN_SEPARATOR_CHARS + slack


def participants(messages: Iterable[Mapping[str, Any]]) -> list[str]:
    """Display names of user messages ("[Name] text"), in order of first appearance."""
    names: dict[str, None] = {}
    for message in messages:
        if message.get("role") != "user":
            continue
        text = _genuine_text(message)
        if text:
            name, _ = split_speaker(text.lstrip())
            if name:
                names.setdefault(name)
    return list(names)


def derive_focus(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """A focus from the last three real user messages (each ≤ 260 chars, all ≤ 700), or None."""
    recent: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        text = " ".join(_genuine_text(message).split())
        if not text:
            continue
        recent.append(_clip(redact(text), FOCUS_MESSAGE_CHARS))
        if len(recent) == FOCUS_MESSAGES:
            break
    if not recent:
        return None
    lines: list[str] = []
    total = 0
    for text in recent:  # newest first, so the oldest is what the total bound drops
        if total + len(text) > FOCUS_TOTAL_CHARS:
            break
        lines.append(text)
        total += len(text)
    return "Recent user focus:\n" + "\n".join(f"- {text}" for text in reversed(lines))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"

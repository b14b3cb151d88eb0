"""Phase 1: shrink old tool output without an LLM (SPEC 6.3, 6.9)."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterable, Mapping, Sequence
from itertools import islice
from typing import Any

from compactbot.compression.message_hints import TOOL_MESSAGE, hinted
from compactbot.compression.messages import call_id, tool_calls_of
from compactbot.compression.tokens import IMAGE_PART_TYPES

# Results this short already cost less than a one-line summary would save.
MIN_PRUNE_CHARS = 200
DEDUP_KEY_CHARS = 32
# Tool-call arguments above this are shrunk leaf by leaf, each long string to its first chars.
MAX_ARGS_CHARS = 500
ARG_LEAF_KEEP_CHARS = 200
TRUNCATION_MARK = "...[truncated]"
DUPLICATE_PLACEHOLDER = "[Duplicate tool output — same content as a more recent call]"
SCREENSHOT_PLACEHOLDER = "[screenshot removed to save context]"
ARG_VALUE_CHARS = 40
COMMAND_CHARS = 80

_DECODER = json.JSONDecoder()
_JSON_WHITESPACE = " \t\n\r"
_ROLE = operator.methodcaller("get", "role")
_TOOL_CALLS = operator.methodcaller("get", "tool_calls")
_COMMAND_TOOLS = frozenset({"terminal", "shell", "bash", "run_command", "execute_command"})


def prune(messages: Sequence[Mapping[str, Any]], tail_start: int) -> list[dict[str, Any]]:
    """Copies of `messages` with tool output before `tail_start` shrunk; duplicates anywhere."""
    return [dict(m) for m in prune_tracked(messages, tail_start)[0]]


def prune_tracked(
    messages: Sequence[Mapping[str, Any]],
    tail_start: int,
    hints: Sequence[int | None] | None = None,
) -> tuple[list[Mapping[str, Any]], set[int]]:
    """`prune`, and the indices of the messages it changed (the others keep their token counts).

    Only the changed messages are copies; the others are the caller's own objects, so a long
    transcript costs one pass that finds the tool messages (`hints`, one message_hints or
    None per message, name them without reading every message).
    """
    out: list[Mapping[str, Any]] = list(messages)
    if hints is None:
        roles = list(map(_ROLE, out))
        results = [i for i, role in enumerate(roles) if role == "tool"]
        callers = [
            i
            for i, calls in enumerate(map(_TOOL_CALLS, out))
            if calls is not None and roles[i] == "assistant" and isinstance(calls, list)
        ]
    else:
        found = hinted(hints, TOOL_MESSAGE)
        results = [i for i in found if out[i].get("role") == "tool"]
        callers = [
            i
            for i in found
            if out[i].get("role") == "assistant" and isinstance(out[i].get("tool_calls"), list)
        ]
    # A result's call comes before it: the results prune shrinks need no call of the tail.
    calls = _calls_by_id(out[i] for i in callers if i < tail_start)
    changed = _deduplicate_results(out, results)
    for index in results:
        if index >= tail_start:
            break
        shrunk = _shrunk_result(out[index], calls)
        if shrunk is not None:
            out[index] = shrunk
            changed.add(index)
    for index in callers:
        if index >= tail_start:
            break
        shrunk = _shrunk_call_arguments(out[index])
        if shrunk is not None:
            out[index] = shrunk
            changed.add(index)
    return out, changed


def _calls_by_id(messages: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    calls: dict[str, Mapping[str, Any]] = {}
    for message in messages:
        for call in tool_calls_of(message):
            ident = call_id(call)
            if ident:
                calls[ident] = call
    return calls


def _deduplicate_results(messages: list[Mapping[str, Any]], results: Sequence[int]) -> set[int]:
    """Older identical results become a placeholder; the newest copy stays verbatim."""
    # Keyed by length and both ends: hashing every long result in full would read each one
    # (a fresh string hashes all its characters); only texts sharing a key are compared.
    seen: dict[tuple[int, str, str], list[str]] = {}
    changed: set[int] = set()
    for index in reversed(results):
        message = messages[index]
        content = message.get("content")
        if not isinstance(content, str) or len(content) < MIN_PRUNE_CHARS:
            continue
        key = (len(content), content[:DEDUP_KEY_CHARS], content[-DEDUP_KEY_CHARS:])
        alike = seen.get(key)
        if alike is None:
            seen[key] = [content]
        elif content in alike:
            messages[index] = {**message, "content": DUPLICATE_PLACEHOLDER}
            changed.add(index)
        else:
            alike.append(content)
    return changed


def _shrunk_result(
    message: Mapping[str, Any], calls: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any] | None:
    """A copy of a tool result with its output shrunk, or None when it stays as it is."""
    content = message.get("content")
    if isinstance(content, list):
        return {
            **message,
            "content": [
                {"type": "text", "text": SCREENSHOT_PLACEHOLDER}
                if isinstance(part, Mapping) and part.get("type") in IMAGE_PART_TYPES
                else part
                for part in content
            ],
        }
    if not isinstance(content, str) or len(content) <= MIN_PRUNE_CHARS:
        return None
    call = calls.get(str(message.get("tool_call_id") or ""))
    return {**message, "content": describe_result(call, content)}


def describe_result(call: Mapping[str, Any] | None, content: str) -> str:
    """An informative one-liner standing in for a long tool result."""
    function = call.get("function") if call else None
    function = function if type(function) is dict or isinstance(function, Mapping) else {}
    name = str(function.get("name") or "tool")
    args = _parse_arguments(function.get("arguments"))
    lines = content.count("\n") + 1 if content and not content.isspace() else 0
    if name in _COMMAND_TOOLS and "command" in args:
        command = _clip(str(args["command"]), COMMAND_CHARS)
        exit_code = _exit_code(content)
        return f"[{name}] ran `{command}` -> exit {exit_code}, {lines} lines output"
    target = ""
    for key, value in islice(args.items(), 4):
        target += f" {key}={_clip(_scalar(value), ARG_VALUE_CHARS)}"
    return f"[{name}]{target} ({len(content)} chars, {lines} lines result)"


def _exit_code(content: str) -> str:
    if content.lstrip(" \t\n\r")[:1] != "{":
        return "?"  # only a JSON object holds an exit code: no parse attempt for plain output
    try:
        parsed = json.loads(content)
    except ValueError:
        return "?"
    if isinstance(parsed, Mapping) and isinstance(parsed.get("exit_code"), int):
        return str(parsed["exit_code"])
    return "?"


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    if not isinstance(raw, str):
        return {}
    try:
        parsed = _json_value(raw)
    except ValueError:
        return {}
    # A fresh decode is nobody else's: no copy. Anything but an object describes nothing.
    return parsed if type(parsed) is dict else {}


def _json_value(text: str) -> Any:
    """`json.loads(text)` for a str, a third of its cost: without its two whitespace
    expressions, which cost more than decoding short tool arguments."""
    stripped = text.strip(_JSON_WHITESPACE)
    value, end = _DECODER.raw_decode(stripped)
    if end != len(stripped):
        raise ValueError(f"extra data at {end}")
    return value


def _scalar(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shrunk_call_arguments(message: Mapping[str, Any]) -> dict[str, Any] | None:
    """A copy with long string leaves shrunk inside the parsed JSON, so the arguments stay
    valid JSON; None when nothing changed.

    Slicing the raw string left unterminated JSON that strict providers reject with a
    non-retryable 400 on every later turn (Hermes #11762).
    """
    new_calls: list[Any] = []
    changed = False
    for call in message.get("tool_calls") or []:
        shrunk = _shrink_call(call)
        changed = changed or shrunk is not call
        new_calls.append(shrunk)
    return {**message, "tool_calls": new_calls} if changed else None


def _shrink_call(call: Any) -> Any:
    # `type() is dict` first: for a dict the ABC checks cost more than the rest of this.
    if type(call) is not dict and not isinstance(call, Mapping):
        return call
    function = call.get("function")
    if type(function) is not dict and not isinstance(function, Mapping):
        return call
    arguments = function.get("arguments")
    if not isinstance(arguments, str) or len(arguments) <= MAX_ARGS_CHARS:
        return call
    try:
        parsed = json.loads(arguments)
    except ValueError:
        return call
    shrunk = json.dumps(_shrink_leaves(parsed), ensure_ascii=False)
    if shrunk == arguments:
        return call
    return {**call, "function": {**call["function"], "arguments": shrunk}}


def _shrink_leaves(value: Any) -> Any:
    if isinstance(value, str):
        if len(value) > ARG_LEAF_KEEP_CHARS:
            return value[:ARG_LEAF_KEEP_CHARS] + TRUNCATION_MARK
        return value
    if isinstance(value, list):
        return [_shrink_leaves(item) for item in value]
    if isinstance(value, dict):
        return {key: _shrink_leaves(item) for key, item in value.items()}
    return value

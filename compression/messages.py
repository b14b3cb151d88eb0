"""Small questions asked of one OpenAI-format message dict."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from compactbot.compression.template import is_summary_text
from compactbot.compression.tokens import IMAGE_PART_TYPES

Message = Mapping[str, Any]


def role_of(message: Message) -> str:
    role = message.get("role")
    return role if isinstance(role, str) else ""


def text_of(message: Message) -> str:
    """The message's text: string content, or its text parts joined."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping) and isinstance(part.get("text"), str)
        )
    return ""


def has_images(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(part, Mapping) and part.get("type") in IMAGE_PART_TYPES for part in content
    )


def tool_calls_of(message: Message) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls")
    if role_of(message) != "assistant" or not isinstance(calls, list):
        return []
    return [call for call in calls if type(call) is dict or isinstance(call, Mapping)]


def call_id(call: Mapping[str, Any]) -> str | None:
    """A tool call's id; Responses-API style `call_id` wins over `id` as Hermes learned."""
    for key in ("call_id", "id"):
        value = call.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def is_tool_call_message(message: Message) -> bool:
    return bool(tool_calls_of(message))


def is_tool_result(message: Message) -> bool:
    return role_of(message) == "tool"


def is_summary_message(message: Message) -> bool:
    return role_of(message) in ("user", "assistant") and is_summary_text(text_of(message))


def is_real_user_message(message: Message) -> bool:
    """A user turn someone actually wrote: not blank and not a compaction summary."""
    if role_of(message) != "user":
        return False
    text = text_of(message)
    if not text.strip() and not has_images(message):
        return False
    return not is_summary_text(text)


def is_visible_assistant_reply(message: Message) -> bool:
    """An assistant message with text a person read (tool-call-only stubs are not)."""
    if role_of(message) != "assistant":
        return False
    text = text_of(message)
    return bool(text.strip()) and not is_summary_text(text)


def last_index(
    messages: Sequence[Message], predicate: Callable[[Message], bool], start: int = 0
) -> int:
    """Index of the newest message at or after `start` matching `predicate`, or -1."""
    for index in range(len(messages) - 1, start - 1, -1):
        if predicate(messages[index]):
            return index
    return -1

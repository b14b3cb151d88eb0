"""Plain-text views of OpenAI-format turns: text, speakers, the records a summary prompt embeds."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from compactbot.compression.tokens import IMAGE_PART_TYPES

# Reasoning blocks some models emit inline; they are not part of what anyone said.
_THINK_BLOCK = re.compile(
    r"<(think|thinking|reasoning|reflection)>.*?(?:</\1>|\Z)", re.DOTALL | re.IGNORECASE
)
# Group-chat attribution written by the gateway: "[Alice] text" (SPEC 3).
_SPEAKER = re.compile(r"^\[(?P<name>[^\[\]\n]{1,64})\][ \t]+")
# A name is at most 64 characters, so its closing bracket is within this many.
_SPEAKER_END = 66
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Bracketed labels that start a message but are not people.
_EPOCH_MS_THRESHOLD = 100_000_000_000
_NOT_SPEAKERS = frozenset(
    {"image", "redacted", "user", "assistant", "system", "tool", "media attachment", "truncated"}
)
# A summary prompt shows each turn as one JSON record on one line (SPEC 16): JSON escapes every
# newline and quote of a message, so no text can open a turn of its own ("\n\n[Alice] …") or
# pass for a line of the prompt around the records ("</turns>").
_RECORDS = json.JSONEncoder(ensure_ascii=False)


def content_text(content: Any) -> str:
    """Text of string or list content; images become "[image]" / "[image: URL]"."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else [content]
    return "\n".join(text for text in (_part_text(part) for part in parts) if text)


def _part_text(part: Any) -> str:
    if not isinstance(part, Mapping):
        return str(part)
    kind = part.get("type")
    if kind in IMAGE_PART_TYPES:
        return _image_label(part)
    text = part.get("text")
    if isinstance(text, str):
        return text
    return f"[{kind}]" if isinstance(kind, str) else ""


def _image_label(part: Mapping[str, Any]) -> str:
    url = part.get("image_url")
    if isinstance(url, Mapping):
        url = url.get("url")
    if isinstance(url, str) and url.startswith(("http://", "https://")):
        return f"[image: {url}]"
    # Inline base64 data would flood the summarizer with noise.
    return "[image]"


def split_speaker(text: str) -> tuple[str | None, str]:
    """("Alice", "hi") for "[Alice] hi"; (None, text) when the text carries no attribution."""
    if text[:1] != "[":  # the expression's first character, without running it
        return None, text
    match = _SPEAKER.match(text)
    if match is None or match["name"].strip().lower().split(":")[0] in _NOT_SPEAKERS:
        return None, text
    return match["name"].strip(), text[match.end() :]


def speaker_of(text: str) -> str | None:
    """`split_speaker(text)[0]`; most texts do not open with a bracket and skip the expression."""
    return split_speaker(text)[0] if text[:1] == "[" else None


def speaker_of_opening(text: str, seen: dict[str, str | None]) -> str | None:
    """`speaker_of(text)`, which reads no further than the first "]" and the character after
    it: `seen` remembers each opening, and a chat has few."""
    if text[:1] != "[":
        return None
    close = text.find("]", 1, _SPEAKER_END)
    if close < 0:
        return speaker_of(text)
    opening = text[: close + 2]
    if opening in seen:
        return seen[opening]
    seen[opening] = name = speaker_of(opening)
    return name


def strip_think(text: str) -> str:
    # Every block opens with "<": most replies hold none and skip the expression.
    return _THINK_BLOCK.sub("", text).strip() if "<" in text else text.strip()


def tool_call_parts(call: Any) -> tuple[str, str]:
    """(name, arguments) of one OpenAI tool call, empty strings when absent."""
    if type(call) is not dict and not isinstance(call, Mapping):
        return "", ""
    function = call.get("function")
    # `type() is dict` first: the ABC check costs more than the rest of this for a dict.
    source = function if type(function) is dict or isinstance(function, Mapping) else call
    name = source.get("name")
    arguments = source.get("arguments")
    return (name if isinstance(name, str) else ""), (
        arguments if isinstance(arguments, str) else "" if arguments is None else str(arguments)
    )


def render_turns(turns: Sequence[Mapping[str, Any]]) -> str:
    """The transcript block of a summary prompt: one JSON record per turn and per line."""
    call_names: dict[str, str] = {}
    lines: list[str] = []
    for turn in turns:
        if turn.get("role") == "assistant":
            for call in turn.get("tool_calls") or ():
                if isinstance(call, Mapping) and isinstance(call.get("id"), str):
                    call_names[call["id"]] = tool_call_parts(call)[0]
        record = _record(turn, call_names)
        if record is not None:
            lines.append(_RECORDS.encode(record))
    return "\n".join(lines)


def _record(turn: Mapping[str, Any], call_names: Mapping[str, str]) -> dict[str, Any] | None:
    """What a summary prompt shows of one turn, a member's speaker in a field apart from the
    text; None for a turn with nothing to show. `call_names`: tool call id -> name."""
    role = turn.get("role")
    text = content_text(turn.get("content")).strip()
    if role == "user":
        speaker, body = split_speaker(text)
        return {"speaker": speaker, "role": "user", "text": body}
    if role == "assistant":
        calls = [
            {"name": name, "arguments": arguments}
            for name, arguments in map(tool_call_parts, turn.get("tool_calls") or ())
        ]
        if not text and not calls:
            return None
        return {"role": "assistant", "text": text, **({"tool_calls": calls} if calls else {})}
    if role == "tool":
        name = turn.get("name") or call_names.get(str(turn.get("tool_call_id")), "tool")
        return {"role": "tool", "name": name, "text": text}
    return {"role": role, "text": text} if text else None


def turn_date(turn: Mapping[str, Any]) -> str | None:
    """The turn's date when the caller stored one (epoch seconds or an ISO string)."""
    for key in ("timestamp", "created_at", "date", "ts"):
        value = turn.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            # Platforms disagree on seconds vs milliseconds; no chat predates 1973 in ms.
            seconds = value / 1000 if value > _EPOCH_MS_THRESHOLD else value
            try:
                return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).date().isoformat()
            except (OverflowError, OSError, ValueError):
                return None
        if isinstance(value, str) and _ISO_DATE.match(value):
            return value[:10]
    return None

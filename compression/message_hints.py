"""What compress() would compute about one message on its own, computed once when it is stored.

A caller that keeps messages (the service's store) computes `message_hints(message)` when it
stores one and hands the hints back with `compress(..., hints=...)`, as it hands back token
counts: a clean, featureless message then costs compress() no gate and no expression at all.
A hint is a bit set of facts, each about this message's content and role only; compress()
ignores the hint of a message it changed (a pruned tool result, an unwrapped summary).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compactbot.compression.extract import read_features, too_light_for_backup
from compactbot.compression.features import NO_FEATURES
from compactbot.compression.messages import is_summary_message
from compactbot.compression.redact import may_hold_secret, redact, redact_value
from compactbot.compression.summary_input import BODY_LIMIT_CHARS, truncate_body
from compactbot.compression.transcript import content_text, strip_think

# redact() leaves the summarizer's view of the text (think blocks stripped) as it is.
SUMMARY_CLEAN = 1
# The extractor finds no features in the message as it is (the deterministic summary).
FEATURELESS = 2
# The extractor finds no features in the summarizer's copy (the backup of exact values).
SHOWN_FEATURELESS = 4
# Its wording cannot make it a summary (a system prompt, or a text without the prefix).
PLAIN = 8
# A tool result, or an assistant message carrying a list of tool calls (what prune reads).
TOOL_MESSAGE = 16
# redact_value() leaves the arguments of every tool call as they are.
CALLS_CLEAN = 32
# A user or assistant chat line the summarizer is shown as it is: a string that nothing
# strips, redacts or cuts, and no tool calls (its copy would be the message itself).
SHOWN_AS_IS = 64
# The backup of exact values reads nothing in the summarizer's copy (extract.too_light_for_backup).
SHOWN_LIGHT = 128
# A member's message the extractor reads a chat rule in (only an admin's stays one, SPEC 16).
STATES_RULE = 256


# The version of the rules that made a hint (above its fact bits). Bump it whenever what the
# extractor, redaction or the summarizer's view read changes: a stored hint of another
# version is read as 0 (nothing known), so no row skips a rule added since, redaction included.
RULES_VERSION = 5  # 5: STATES_RULE; 4: plain-word norms, picks, choices, handed tasks
_FACT_BITS = 0x1FF
VERSION_SHIFT = 9


class HintsError(ValueError):
    """`hints` does not fit the messages it was given with."""


def message_hints(message: Mapping[str, Any]) -> int:
    """The facts compress() may take as known about `message` (a bit set, 0: none), stamped
    with RULES_VERSION."""
    return _facts(message) | (RULES_VERSION << VERSION_SHIFT)


def _facts(message: Mapping[str, Any]) -> int:
    role = message.get("role")
    text = content_text(message.get("content"))
    view = strip_think(text) if role == "assistant" else text
    redacted = redact(view)
    hints = SUMMARY_CLEAN if redacted == view else 0
    if role == "system" or not is_summary_message(message):
        hints |= PLAIN
    calls = message.get("tool_calls")
    if role == "tool" or (role == "assistant" and isinstance(calls, list)):
        hints |= TOOL_MESSAGE
    if not isinstance(calls, list) or all(_arguments_clean(call) for call in calls):
        hints |= CALLS_CLEAN
    if role not in ("user", "assistant"):
        return hints
    if hints & SUMMARY_CLEAN and _shown_as_is(message, view):
        hints |= SHOWN_AS_IS
    features = read_features(message)
    if features is NO_FEATURES:
        hints |= FEATURELESS
    elif role == "user" and any(found.kind == "rule" for found in features.candidates):
        hints |= STATES_RULE
    shown = truncate_body(redacted)
    # Most copies are the text itself (nothing redacted, cut or stripped): read once.
    same = shown == text and type(message.get("content")) is str
    copy = message if same else {**message, "content": shown}
    shown_features = features if same else read_features(copy)
    if shown_features is NO_FEATURES:
        hints |= SHOWN_FEATURELESS
    if too_light_for_backup(copy, shown_features):
        hints |= SHOWN_LIGHT
    return hints


def view_hint(message: Mapping[str, Any]) -> int | None:
    """What the summarizer's view learns of a message given without hints: a chat line shown
    as it is is SHOWN_AS_IS and SUMMARY_CLEAN, and SHOWN_LIGHT when the backup keeps nothing
    of it; None for any other message."""
    content, role = message.get("content"), message.get("role")
    if not (
        type(content) is str
        and (role == "user" or (role == "assistant" and "<" not in content))
        and _shown_as_is(message, content)
    ):
        return None
    if content and may_hold_secret(content) and redact(content) != content:
        return None
    light = too_light_for_backup(message)
    return SHOWN_AS_IS | SUMMARY_CLEAN | (SHOWN_LIGHT if light else 0)


def _shown_as_is(message: Mapping[str, Any], view: str) -> bool:
    content = message.get("content")
    return (
        type(content) is str
        and "tool_calls" not in message
        and view == content
        and content == content.strip()
        and len(content) <= BODY_LIMIT_CHARS
    )


def _arguments_clean(call: Any) -> bool:
    function = call.get("function") if isinstance(call, Mapping) else None
    arguments = function.get("arguments") if isinstance(function, Mapping) else None
    return not isinstance(arguments, str) or redact_value(arguments) == arguments


def hinted(hints: Sequence[int | None], mask: int, *, clear: bool = False) -> list[int]:
    """The indices whose hint has a bit of `mask` set (`clear`: none of them); a None hint
    is always taken, as nothing is known of it."""
    return [i for i, hint in enumerate(hints) if hint is None or bool(hint & mask) != clear]


def states_rule(hints: int) -> bool:
    """Whether `message_hints` read a chat rule in a member's message."""
    return hints >> VERSION_SHIFT == RULES_VERSION and bool(hints & STATES_RULE)


def checked_hints(hints: Sequence[int] | None, messages: int) -> Sequence[int] | None:
    """The fact bits of `hints`; a hint made by other rules (an older version) knows nothing."""
    if hints is None:
        return None
    if len(hints) != messages:
        raise HintsError(f"hints has {len(hints)} entries for {messages} messages")
    return [h & _FACT_BITS if h >> VERSION_SHIFT == RULES_VERSION else 0 for h in hints]

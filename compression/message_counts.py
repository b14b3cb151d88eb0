"""Token counts for one compress() call: the store's counts, carried through the phases' copies.

Phases copy message dicts (`dict(m)`) and replace a value only where they change the message,
so a copy whose values are the very objects of a counted message has that message's count.
Only what a phase really changed, or a message nobody counted, goes to the tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from compactbot.compression.tokens import (
    CHARS_PER_TOKEN_ESTIMATE,
    MESSAGE_OVERHEAD_TOKENS,
    MessageCounter,
    TokenCounter,
)
from compactbot.compression.transcript import content_text

Message = Mapping[str, Any]
# Chars per token by role; "" for any other role.
Densities = dict[str, float]
# What count_message() reads of a message besides its content.
_COUNTED_BESIDES_CONTENT = ("tool_calls", "name", "tool_call_id")


class TokenCountsError(ValueError):
    """`token_counts` does not fit the messages it was given with."""


def input_counts(
    messages: Sequence[Message], token_counts: Sequence[int] | None, counter: MessageCounter
) -> list[int]:
    """One count per message: the caller's, checked, or each message counted."""
    if token_counts is None:
        return [counter.count_message(message) for message in messages]
    counts = list(token_counts)
    if len(counts) != len(messages):
        raise TokenCountsError(
            f"token_counts has {len(counts)} entries for {len(messages)} messages"
        )
    # set(map(type, ...)) checks 50,000 counts in C; the loop below only runs to name the culprit.
    if counts and (set(map(type, counts)) != {int} or min(counts) < 0):
        for index, count in enumerate(counts):
            if type(count) is not int or count < 0:
                raise TokenCountsError(f"token_counts[{index}] is {count!r}, not a count >= 0")
    return counts


def recounted(
    messages: Sequence[Message],
    counts: Sequence[int],
    changed: Iterable[int],
    counter: MessageCounter,
) -> list[int]:
    """`counts` with the messages at the `changed` positions counted afresh."""
    out = list(counts)
    for index in changed:
        out[index] = counter.count_message(messages[index])
    return out


def summarised_tokens(
    messages: Sequence[Message],
    counts: Sequence[int],
    start: int,
    end: int,
    estimated: Iterable[int],
    chars_per_token: float = CHARS_PER_TOKEN_ESTIMATE,
) -> int:
    """Tokens of `messages[start:end]`: their counts, except at the `estimated` positions,
    whose characters are taken at `chars_per_token`. A summarised message is never kept, so its
    size only steers the summary's budget: not worth a pass of the tokenizer."""
    total = sum(counts[start:end])
    densities = {"": chars_per_token}
    for index in estimated:
        if start <= index < end:
            total += estimated_count(messages[index], densities) - counts[index]
    return total


def estimated_count(message: Message, densities: Densities) -> int:
    """`count_message` estimated from the message's characters at its role's density."""
    density = densities.get(str(message.get("role"))) or densities[""]
    return MESSAGE_OVERHEAD_TOKENS + int(message_chars(message) / density + 0.5)


def message_chars(message: Message) -> int:
    """The characters of every part `count_message` counts (a tool call as the JSON it counts)."""
    content = message.get("content")
    chars = len(content) if type(content) is str else len(content_text(content))
    for call in message.get("tool_calls") or ():
        chars += len(json.dumps(call, ensure_ascii=False, sort_keys=True, default=str))
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str):
            chars += len(value)
    return chars


def assembled_total(
    messages: Sequence[Message],
    sources: list[int],
    known: Sequence[Message],
    known_counts: Sequence[int],
    counter: MessageCounter,
) -> int:
    """Tokens of `messages`: `known_counts[sources[i]]` for an unchanged copy of a known
    message, a count of the others (new or changed)."""
    # In C: -1 reads the 0 appended, and list.index finds the few new messages.
    total = sum(map([*known_counts, 0].__getitem__, sources))
    index = -1
    for _ in range(sources.count(-1)):
        index = sources.index(-1, index + 1)
        message = messages[index]
        extended = _extended_count(message, known, known_counts, counter) if known else None
        total += counter.count_message(message) if extended is None else extended
    return total


def _extended_count(
    message: Message, known: Sequence[Message], counts: Sequence[int], counter: MessageCounter
) -> int | None:
    """The count of `message` when it is the first known message (the system prompt) with
    text appended to its content (the compaction note): the prompt is not encoded again."""
    source = known[0]
    content, prompt = message.get("content"), source.get("content")
    if not (
        isinstance(counter, TokenCounter)
        and type(content) is str
        and type(prompt) is str
        and len(content) > len(prompt)
        and content.startswith(prompt)
        and not any(source.get(key) or message.get(key) for key in _COUNTED_BESIDES_CONTENT)
    ):
        return None
    suffix = content[len(prompt) :]
    prompt_tokens = counts[0] - MESSAGE_OVERHEAD_TOKENS
    return MESSAGE_OVERHEAD_TOKENS + counter.count_extended(prompt, prompt_tokens, suffix)

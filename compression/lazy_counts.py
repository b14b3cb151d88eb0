"""Token counts taken when first read, for a compress() call given no `token_counts`.

The call reads the size of the head and of the tail it keeps; the middle it summarises is
never kept, so its size (which only steers the summary's budget and `tokens_before`) is
estimated from its characters, at the density that the counted messages of the same role
have (the tail's, and a sample of the middle's), instead of being tokenized.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, overload

from compactbot.compression.tokens import CHARS_PER_TOKEN_ESTIMATE, MESSAGE_OVERHEAD_TOKENS
from compactbot.compression.transcript import content_text

Message = Mapping[str, Any]
# Messages counted in a range that is otherwise only estimated, to know its densities.
DENSITY_SAMPLES = 64
# Chars per token by role; "" for any other role.
Densities = dict[str, float]
# json.dumps of {"function": {"arguments": "", "name": ""}, "id": "", "type": ""}, keys sorted.
_CALL_ENVELOPE_CHARS = len('{"function": {"arguments": "", "name": ""}, "id": "", "type": ""}')
# An estimated input within this share of the output is counted: was anything saved?
CLOSE_CALL_RATIO = 0.8


class LazyCounts(Sequence[int]):
    """One count per message, each computed by `count_of(index)` the first time it is read."""

    def __init__(self, messages: Sequence[Message], count_of: Callable[[int], int]) -> None:
        self._messages = messages
        self._count_of = count_of
        self._counts: list[int | None] = [None] * len(messages)
        self._message_chars: list[int | None] = [None] * len(messages)
        self._estimates: dict[int, int] = {}
        self._chars = 0  # of the messages counted so far, and their tokens without framing
        self._tokens = 0
        self._by_role: dict[str, list[int]] = {}  # the same, by role: [chars, tokens]

    def __len__(self) -> int:
        return len(self._counts)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> list[int]: ...
    def __getitem__(self, index: int | slice) -> int | list[int]:
        if isinstance(index, slice):
            return [self._read(i) for i in range(*index.indices(len(self._counts)))]
        return self._read(index if index >= 0 else index + len(self._counts))

    def _read(self, index: int) -> int:
        count = self._counts[index]
        if count is None:
            count = self._counts[index] = self._count_of(index)
            self._estimates.pop(index, None)
            chars, tokens = self._chars_at(index), max(0, count - MESSAGE_OVERHEAD_TOKENS)
            self._chars += chars
            self._tokens += tokens
            role = self._by_role.setdefault(str(self._messages[index].get("role")), [0, 0])
            role[0] += chars
            role[1] += tokens
        return count

    def _chars_at(self, index: int) -> int:
        chars = self._message_chars[index]
        if chars is None:
            chars = self._message_chars[index] = message_chars(self._messages[index])
        return chars

    def chars_per_token(self) -> float:
        """The density of the messages counted so far (chars/4 before any)."""
        if self._tokens <= 0 or self._chars <= 0:
            return float(CHARS_PER_TOKEN_ESTIMATE)
        return max(1.0, self._chars / self._tokens)

    def sample(self, start: int, end: int) -> None:
        """Count `DENSITY_SAMPLES` messages spread evenly over `messages[start:end]`, so that
        `densities()` knows the range as well as what was counted for other reasons."""
        step = (end - start) / DENSITY_SAMPLES
        if step > 0:
            for index in dict.fromkeys(
                start + int((k + 0.5) * step) for k in range(DENSITY_SAMPLES)
            ):
                self._read(index)

    def densities(self) -> Densities:
        """Chars per token of each role's messages counted so far ("": of all of them): a
        chat's replies, tool output and members' lines each have their own."""
        densities: Densities = {
            role: max(1.0, chars / tokens)
            for role, (chars, tokens) in self._by_role.items()
            if chars > 0 and tokens > 0
        }
        densities[""] = self.chars_per_token()
        return densities

    def known_or_estimated(self, index: int, densities: Densities) -> int:
        count = self._counts[index]
        if count is not None:
            return count
        estimate = self._estimates.get(index)
        if estimate is None:  # the middle's estimate is read for its budget, then the total
            role = self._messages[index].get("role")
            estimate = self._estimates[index] = _estimated(self._chars_at(index), role, densities)
        return estimate

    def range_total(self, start: int, end: int, densities: Densities, skip: set[int]) -> int:
        """`known_or_estimated` summed over `start..end` but `skip`, in one pass: the middle
        of a long chat is estimated here, message by message."""
        counts, estimates, messages = self._counts, self._estimates, self._messages
        total = 0
        for index in range(start, end):
            if index in skip:
                continue
            count = counts[index]
            if count is None:
                count = estimates.get(index)
            if count is None:
                message = messages[index]
                content = message.get("content")
                # Inline, the common message: a chat line, its content all it holds.
                if len(message) == 2 and type(content) is str and "role" in message:
                    chars = self._message_chars[index] = len(content)
                else:
                    chars = self._chars_at(index)
                count = estimates[index] = _estimated(chars, message.get("role"), densities)
            total += count
        return total

    def estimated_total(self) -> int:
        """Counted messages as counted, the others estimated (at `densities()` where no
        estimate was made yet): sums in C over what the call already holds."""
        known = [count for count in self._counts if count is not None]
        total = sum(known) + sum(self._estimates.values())
        if len(known) + len(self._estimates) < len(self._counts):
            densities = self.densities()
            for index, count in enumerate(self._counts):
                if count is None and index not in self._estimates:
                    total += self.known_or_estimated(index, densities)
        return total

    def exact_total(self) -> int:
        return sum(self._read(i) for i in range(len(self._counts)))


def tokens_before(counts: Sequence[int], after: int) -> int:
    """The input's tokens; with lazy counts the summarised messages are estimated, unless the
    estimate is too close to `after` to tell whether the compaction saved anything."""
    if not isinstance(counts, LazyCounts):
        return sum(counts)
    estimate = counts.estimated_total()
    return estimate if after < estimate * CLOSE_CALL_RATIO else counts.exact_total()


def message_chars(message: Message) -> int:
    """The characters of every part `count_message` counts (a tool call as the JSON it counts)."""
    content = message.get("content")
    chars = len(content) if type(content) is str else len(content_text(content))
    if len(message) == 2 and "role" in message and "content" in message:  # a plain chat line
        return chars
    for call in message.get("tool_calls") or ():
        chars += _call_chars(call)
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str):
            chars += len(value)
    return chars


def _call_chars(call: Any) -> int:
    """len(json.dumps(call, sort_keys=True)) for the usual {id, type, function} call, without
    writing it: the envelope's fixed characters, its values, and their escaped quotes."""
    function = call.get("function") if isinstance(call, Mapping) else None
    if not (isinstance(function, Mapping) and len(call) == 3 and len(function) == 2):
        return len(json.dumps(call, ensure_ascii=False, sort_keys=True, default=str))
    name, arguments, ident = function.get("name"), function.get("arguments"), call.get("id")
    kind = call.get("type")
    if not (
        isinstance(name, str)
        and isinstance(arguments, str)
        and isinstance(ident, str)
        and isinstance(kind, str)
    ):
        return len(json.dumps(call, ensure_ascii=False, sort_keys=True, default=str))
    return _CALL_ENVELOPE_CHARS + sum(map(_json_chars, (name, arguments, ident, kind)))


def _json_chars(text: str) -> int:
    """The characters of `text` as a JSON string, quotes left out (ensure_ascii=False)."""
    if text.isprintable():  # only quotes and backslashes are escaped: one character more each
        return len(text) + text.count('"') + text.count("\\")
    return len(json.dumps(text, ensure_ascii=False)) - 2


def estimated_count(message: Message, densities: Densities) -> int:
    """`count_message` estimated from the message's characters at its role's density."""
    return _estimated(message_chars(message), message.get("role"), densities)


def _estimated(chars: int, role: Any, densities: Densities) -> int:
    density = densities.get(str(role)) or densities[""]
    return MESSAGE_OVERHEAD_TOKENS + int(chars / density + 0.5)

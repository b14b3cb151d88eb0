"""Token counts taken when first read, for a compress() call given no `token_counts`.

The call reads the size of the head and of the tail it keeps; the middle it summarises is
never kept, so its size (which only steers the summary's budget and `tokens_before`) is
estimated at the density of the messages that were counted, instead of being tokenized.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, overload

from compression.tokens import CHARS_PER_TOKEN_ESTIMATE, MESSAGE_OVERHEAD_TOKENS
from compression.transcript import content_text, tool_call_parts

Message = Mapping[str, Any]
# An estimated input within this share of the output is counted: was anything saved?
CLOSE_CALL_RATIO = 0.8


class LazyCounts(Sequence[int]):
    """One count per message, each computed by `count_of(index)` the first time it is read."""

    def __init__(self, messages: Sequence[Message], count_of: Callable[[int], int]) -> None:
        self._messages = messages
        self._count_of = count_of
        self._counts: list[int | None] = [None] * len(messages)
        self._estimates: dict[int, int] = {}
        self._chars = 0  # of the messages counted so far, and their tokens without framing
        self._tokens = 0

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
            self._chars += message_chars(self._messages[index])
            self._tokens += max(0, count - MESSAGE_OVERHEAD_TOKENS)
        return count

    def chars_per_token(self) -> float:
        """The density of the messages counted so far (chars/4 before any)."""
        if self._tokens <= 0 or self._chars <= 0:
            return float(CHARS_PER_TOKEN_ESTIMATE)
        return max(1.0, self._chars / self._tokens)

    def known_or_estimated(self, index: int, density: float) -> int:
        count = self._counts[index]
        if count is not None:
            return count
        estimate = self._estimates.get(index)
        if estimate is None:  # the middle's estimate is read for its budget, then the total
            estimate = self._estimates[index] = estimated_count(self._messages[index], density)
        return estimate

    def estimated_total(self) -> int:
        """Counted messages as counted, the others estimated (at `chars_per_token()` where no
        estimate was made yet): sums in C over what the call already holds."""
        known = [count for count in self._counts if count is not None]
        total = sum(known) + sum(self._estimates.values())
        if len(known) + len(self._estimates) < len(self._counts):
            density = self.chars_per_token()
            for index, count in enumerate(self._counts):
                if count is None and index not in self._estimates:
                    total += self.known_or_estimated(index, density)
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
    """The characters of every part `count_message` counts."""
    content = message.get("content")
    chars = len(content) if type(content) is str else len(content_text(content))
    if len(message) == 2 and "role" in message and "content" in message:  # a plain chat line
        return chars
    for call in message.get("tool_calls") or ():
        name, arguments = tool_call_parts(call)
        chars += len(name) + len(arguments)
    for key in ("name", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str):
            chars += len(value)
    return chars


def estimated_count(message: Message, chars_per_token: float) -> int:
    """`count_message` estimated from the message's characters."""
    return MESSAGE_OVERHEAD_TOKENS + int(message_chars(message) / chars_per_token + 0.5)

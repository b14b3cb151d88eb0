"""What a compaction hands compress(): the transcript with the counts and hints stored with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compactbot.bot.store.base import StoredMessage
from compactbot.compression.message_hints import message_hints
from compactbot.compression.tokens import TokenCounter


def compress_inputs(
    system_prompt: str | None, considered: Sequence[StoredMessage], counter: TokenCounter
) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """[system, *considered] with one count and one hint each, so nothing stored is rescanned.

    A row stored before migration 11 has no hints: it costs here what compress() would spend on
    it anyway, so one such row does not make the whole call go without hints.
    """
    system = {"role": "system", "content": system_prompt}
    messages = [system, *(row.to_openai() for row in considered)]
    counts = [counter.count_message(system), *(row.tokens for row in considered)]
    hints = [message_hints(system)]
    for message, row in zip(messages[1:], considered, strict=True):
        hints.append(row.hints if row.hints is not None else message_hints(message))
    return messages, counts, hints

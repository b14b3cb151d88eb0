"""The compacted transcript, made to save overall (SPEC 6.6, 6.9).

When the rendered memory would not leave the transcript smaller, the lower tiers are shed;
rules, preferences and open action items never are: then the compaction is a `noop`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compactbot.compression.assemble import assembled
from compactbot.compression.memory_render import Rendered
from compactbot.compression.message_counts import assembled_total
from compactbot.compression.summary_step import Summary
from compactbot.compression.tokens import MessageCounter

# Token counts of a rendering are a sum over its lines: a re-render may miss by a few tokens.
FIT_ATTEMPTS = 3


@dataclass(frozen=True, slots=True)
class Saved:
    messages: list[dict[str, Any]]
    rendered: Rendered
    before: int
    after: int


def saving_output(
    summary: Summary,
    pruned: Sequence[Mapping[str, Any]],
    pruned_tokens: Sequence[int],
    span: tuple[int, int],
    counts: Sequence[int],
    counter: MessageCounter,
) -> Saved | None:
    """Head + rendered summary + tail when that is smaller than the input, else None."""
    start, end = span
    head, tail = pruned[:start], pruned[end:]
    kept = [*head, *tail]
    kept_tokens = [*pruned_tokens[:start], *pruned_tokens[end:]]
    rendered = summary.rendered
    if rendered is None or summary.render is None:
        return None
    for _ in range(FIT_ATTEMPTS):
        output = assembled(head, rendered.body, tail)
        after = assembled_total(output.messages, output.sources, kept, kept_tokens, counter)
        before = sum(counts)
        if after < before:
            return Saved(output.messages, rendered, before, after)
        smaller = summary.render(counter.count_text(rendered.body) - (after - before) - 1)
        if smaller.must_show_hidden > rendered.must_show_hidden or smaller.body == rendered.body:
            return None  # what must be shown is never shed to manufacture a saving
        rendered = smaller
    return None

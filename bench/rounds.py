"""Forced compaction rounds over a planted room, each compacting the previous round's output.

Messages are fed one by one with the counts, kinds and sources the service stores; whenever
the transcript reaches the window's trigger (between whole tool rounds) a forced compaction
runs, as the service's compactor would call it: a compressor built from the stored state, the
session's memory, `kinds` marking the summary rows. After chosen rounds every planted item is
probed in the context the model would get next and through `recall` over the memory.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bench.planted_items import Planted
from bench.probes import Context, in_context, message_text, via_recall
from bench.truncation import newest_that_fit
from bench.workloads import Workload
from compactbot.compression import (
    SUMMARY_END_MARKER,
    SUMMARY_PREFIX,
    CompressorConfig,
    CompressorState,
    ContextCompressor,
    Memory,
    MessageSource,
    Summarizer,
)
from compactbot.compression.tokens import counter_for

Mode = Literal["fold", "one-shot", "truncation"]


@dataclass(frozen=True, slots=True)
class Strategy:
    name: str
    mode: Mode
    summarizer: Callable[[], Summarizer | None] = lambda: None


@dataclass(slots=True)
class Row:
    message: dict[str, Any]
    tokens: int
    kind: str  # "summary" for the rows a compaction wrote as the summary
    source: MessageSource | None


@dataclass(frozen=True, slots=True)
class Round:
    outcome: str
    tokens_before: int
    tokens_after: int
    summary_tokens: int
    entries: int  # memory entries, superseded ones included
    shown_entries: int


@dataclass(slots=True)
class RoundsRun:
    strategy: str
    room: str
    window: int
    rounds: list[Round] = field(default_factory=list)
    # (item id, k) -> (in the context, found by recall; None without a memory)
    seen: dict[tuple[str, int], tuple[bool, bool | None]] = field(default_factory=dict)
    # (item id, k) observations where the item was still verbatim in the kept rows, not only
    # in the rendered summary
    verbatim: set[tuple[str, int]] = field(default_factory=set)
    kinds: dict[str, str] = field(default_factory=dict)  # item id -> kind


def source_of(index: int, at: float, author: str | None) -> MessageSource:
    """A MessageSource with the author where this version of the API records one (SPEC 16)."""
    names = {f.name for f in dataclasses.fields(MessageSource)}
    extra: dict[str, Any] = {}
    for key in ("author_id", "user_id"):
        if key in names and author:
            extra[key] = author.lower()
    for key in ("author", "author_name", "name", "speaker"):
        if key in names and author:
            extra[key] = author
    return MessageSource(str(index), at, **extra)


def _author(message: Mapping[str, Any]) -> str | None:
    text = message_text(message)
    if message.get("role") == "user" and text.startswith("[") and "] " in text:
        return text[1 : text.index("] ")]
    return None


def _is_summary(message: Mapping[str, Any]) -> bool:
    return SUMMARY_PREFIX in message_text(message)


def _fingerprint(message: Mapping[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)


def carry(rows: Sequence[Row], out: Sequence[Mapping[str, Any]], count: Any) -> list[Row]:
    """The stored rows after a compaction: verbatim ones keep their count, kind and source."""
    by_print = {_fingerprint(r.message): r for r in rows}
    new = []
    for message in out:
        old = by_print.get(_fingerprint(message))
        if old is not None:
            new.append(old)
            continue
        kind = "summary" if _is_summary(message) else "message"
        new.append(Row(dict(message), count(message), kind, None))
    return new


def without_summary(rows: Sequence[Row], count: Any) -> list[Row]:
    """The rows with every summary cut out: what a one-shot compactor is left with."""
    out = []
    for row in rows:
        if row.kind != "summary":
            out.append(row)
            continue
        text = message_text(row.message)
        start = text.find(SUMMARY_PREFIX)
        end = text.find(SUMMARY_END_MARKER)
        rest = text[:start] + (text[end + len(SUMMARY_END_MARKER) :] if end >= 0 else "")
        if rest.strip() and row.message.get("role") != "system":
            message = {**row.message, "content": rest.strip()}
            out.append(Row(message, count(message), "message", row.source))
    return out


def round_complete(messages: Sequence[Mapping[str, Any]], i: int) -> bool:
    """Compress only between whole tool rounds (SPEC 6.9): never while a call awaits results."""
    if messages[i].get("tool_calls"):
        return False
    if messages[i].get("role") == "tool":
        return i + 1 == len(messages) or messages[i + 1].get("role") != "tool"
    return True


async def run_rounds(
    room: Workload,
    planted: Sequence[Planted],
    *,
    window: int,
    strategy: Strategy,
    rounds: int,
    until_entries: int = 0,
    budgets: Mapping[int, int] | None = None,
) -> RoundsRun:
    """Feed `room`, compacting at each trigger, until every planted item has lived through
    `rounds` rounds and the memory holds more than `until_entries` entries (or the room ends).
    Every item is probed after every round it has lived through."""
    counter = counter_for(None)
    config = CompressorConfig(context_length=window)
    messages = room.messages
    rows = [Row(dict(messages[0]), counter.count_message(messages[0]), "message", None)]
    run = RoundsRun(strategy.name, room.name, window, kinds={p.id: p.kind for p in planted})
    born: dict[str, int] = {}
    by_index = {p.index: p for p in planted}
    summarizer = strategy.summarizer()
    state: CompressorState | None = None
    memory = Memory()
    now = [room.times[0]]
    total = rows[0].tokens
    for i in range(1, len(messages)):
        now[0] = room.times[i]
        message = dict(messages[i])
        rows.append(
            Row(message, counter.count_message(message), "message",
                source_of(i, room.times[i], _author(message)))
        )  # fmt: skip
        total += rows[-1].tokens
        if i in by_index:
            born[by_index[i].id] = len(run.rounds)
        if total < config.threshold_tokens or not round_complete(messages, i):
            continue
        before = total
        if strategy.mode == "truncation":
            budget = (budgets or {}).get(len(run.rounds) + 1, config.tail_token_budget)
            keep = newest_that_fit([r.message for r in rows], [r.tokens for r in rows], budget)
            rows = [rows[0], *rows[len(rows) - keep :]]
            outcome, summary_tokens = "truncated", 0
        else:
            if strategy.mode == "one-shot":
                rows, state, memory = without_summary(rows, counter.count_message), None, Memory()
            compressor = ContextCompressor(config, summarizer, state=state, clock=lambda: now[0])
            result = await compressor.compress(
                [r.message for r in rows],
                force=True,
                token_counts=[r.tokens for r in rows],
                kinds=[r.kind for r in rows],
                sources=[r.source for r in rows],
                memory=memory,
            )
            outcome = result.outcome
            summary_tokens = counter.count_text(result.summary or "")
            if result.changed:
                rows = carry(rows, result.messages, counter.count_message)
                memory = result.memory or memory
            state = compressor.state
        total = sum(r.tokens for r in rows)
        entries = len(memory.entries)
        shown = sum(1 for e in memory.entries if e.shown)
        run.rounds.append(Round(outcome, before, total, summary_tokens, entries, shown))
        done = len(run.rounds)
        lived = done - max(born.values(), default=0) if len(born) == len(planted) else 0
        finished = lived >= rounds and (not until_entries or entries > until_entries)
        _probe(run, planted, born, rows, memory if strategy.mode != "truncation" else None)
        if finished:
            break
    return run


def _probe(
    run: RoundsRun,
    planted: Sequence[Planted],
    born: Mapping[str, int],
    rows: Sequence[Row],
    memory: Memory | None,
) -> None:
    context = Context.of([r.message for r in rows])
    kept = Context.of([r.message for r in rows[1:] if r.kind != "summary"])
    done = len(run.rounds)
    for item in planted:
        if item.id not in born:
            continue
        k = done - born[item.id]
        found = via_recall(item, memory) if memory is not None else None
        run.seen[(item.id, k)] = (in_context(item, context), found)
        if in_context(item, kept):
            run.verbatim.add((item.id, k))

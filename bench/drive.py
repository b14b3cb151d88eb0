"""Feed a workload message by message through a context strategy, compacting when it says so.

Three strategies share the loop: the real `ContextCompressor` (with any summarizer), plain
truncation to a token budget, and no compression at all. After every compaction each planted
item is probed on the transcript the model would see next.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from bench.probes import Context, Verdict, pin_intact, probe
from bench.validity import transcript_violations, violations
from bench.workloads import Workload
from compactbot.compression import CompressorConfig, ContextCompressor, Summarizer
from compactbot.compression.messages import role_of
from compactbot.compression.tokens import counter_for

StrategyKind = Literal["compressor", "truncation", "none"]


@dataclass(slots=True)
class Clock:
    now: float

    def __call__(self) -> float:
        return self.now


@dataclass(frozen=True, slots=True)
class Compaction:
    index: int  # workload message after which it ran
    outcome: str
    tokens_before: int
    tokens_after: int


@dataclass(slots=True)
class Run:
    strategy: str
    workload: str
    people: int
    window: int
    compactions: list[Compaction] = field(default_factory=list)
    summary_tokens: list[int] = field(default_factory=list)  # rendered summary per compaction
    attempts: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)  # summarizer errors, by message
    # (item id, kind, k) -> verdict after the k-th compaction the item lived through
    verdicts: dict[tuple[str, str, int], Verdict] = field(default_factory=dict)
    pins: dict[int, list[bool]] = field(default_factory=dict)  # k -> intact per pin
    outputs_checked: int = 0
    problems: list[str] = field(default_factory=list)
    trace: list[tuple[int, int]] = field(default_factory=list)  # (message index, tokens)
    peak_tokens: int = 0
    over_window_at: int | None = None


async def drive(
    workload: Workload,
    *,
    strategy: str,
    kind: StrategyKind,
    window: int,
    summarizer: Summarizer | None = None,
    truncate_to: int | None = None,
    probe_items: bool = True,
) -> Run:
    counter = counter_for(None)
    clock = Clock(workload.times[0])
    config = CompressorConfig(context_length=window)
    compressor = ContextCompressor(config, summarizer, clock=clock)
    threshold = config.threshold_tokens
    run = Run(strategy, workload.name, len(workload.people), window)
    planted = {p.index: p for p in workload.planted} if probe_items else {}
    born: dict[str, int] = {}
    turns = set(workload.turns)
    transcript: list[dict[str, Any]] = []
    tokens = 0
    messages = workload.messages
    for i, message in enumerate(messages):
        clock.now = workload.times[i]
        transcript.append(dict(message))
        tokens += counter.count_message(message)
        if i in planted:
            born[planted[i].id] = len(run.compactions)
        run.trace.append((i, tokens))
        if not _round_complete(messages, i):
            continue
        if kind == "none":
            _sent(run, i, tokens)
            continue
        if i in turns and kind == "compressor":
            # The provider's count of this turn's request, as the runner reports it.
            compressor.update_from_response({"prompt_tokens": tokens})
        if kind == "compressor":
            if not compressor.should_compress(tokens):
                _sent(run, i, tokens)
                continue
            before = transcript
            snapshot = copy.deepcopy(before)
            result = await compressor.compress(before, pins=workload.pins)
            run.attempts[result.outcome] += 1
            if result.error:
                run.errors[result.error] += 1
            run.outputs_checked += 1
            problems = violations(before, result)
            if before != snapshot:
                problems.append("compress() mutated its input")
            run.problems += [f"{strategy}/{workload.name}@{i}: {p}" for p in problems]
            if result.outcome not in ("compressed", "fallback"):
                _sent(run, i, tokens)
                continue
            transcript = [dict(m) for m in result.messages]
            after = counter.count_messages(transcript)
            run.compactions.append(Compaction(i, result.outcome, tokens, after))
            run.summary_tokens.append(counter.count_text(result.summary or ""))
        else:
            if tokens < threshold:
                _sent(run, i, tokens)
                continue
            transcript = truncate(transcript, truncate_to or threshold // 2)
            after = counter.count_messages(transcript)
            run.attempts["truncated"] += 1
            run.outputs_checked += 1
            run.problems += [
                f"{strategy}/{workload.name}@{i}: {p}" for p in transcript_violations(transcript)
            ]
            run.compactions.append(Compaction(i, "truncated", tokens, after))
        tokens = after
        run.trace.append((i, tokens))
        _sent(run, i, tokens)
        if planted:
            _observe(run, workload, transcript, born)
    return run


def _sent(run: Run, index: int, tokens: int) -> None:
    """The transcript as a request would carry it next: between whole rounds, after any
    compaction decision."""
    run.peak_tokens = max(run.peak_tokens, tokens)
    if tokens > run.window and run.over_window_at is None:
        run.over_window_at = index


def _observe(
    run: Run,
    workload: Workload,
    transcript: Sequence[Mapping[str, Any]],
    born: dict[str, int],
) -> None:
    context = Context.of(transcript)
    n = len(run.compactions)
    for item in workload.planted:
        if item.id not in born:
            continue
        k = n - born[item.id]
        run.verdicts[(item.id, item.kind, k)] = probe(item, context)
    for pin in workload.pins:
        pinned = next((p for p in workload.planted if p.pinned and p.text == pin), None)
        if pinned is not None and pinned.id in born:
            run.pins.setdefault(n - born[pinned.id], []).append(pin_intact(pin, context))


def _round_complete(messages: Sequence[Mapping[str, Any]], i: int) -> bool:
    """Compress only between whole tool rounds (SPEC 6.9): never while a call awaits results."""
    message = messages[i]
    if message.get("tool_calls"):
        return False
    if role_of(message) == "tool":
        following = messages[i + 1] if i + 1 < len(messages) else None
        return following is None or role_of(following) != "tool"
    return True


def truncate(transcript: Sequence[Mapping[str, Any]], budget: int) -> list[dict[str, Any]]:
    """Plain truncation: the system prompt plus the newest whole turns within `budget` tokens.

    A turn starts at a user message (providers reject a transcript that starts with a tool
    result or has no user message), so when even the newest turn is over budget it is kept
    whole, as the compressor keeps the last user message.
    """
    counter = counter_for(None)
    head = [dict(transcript[0])] if transcript and role_of(transcript[0]) == "system" else []
    body = list(transcript[len(head) :])
    room = budget - counter.count_messages(head)
    cut = len(body)
    while cut > 0 and counter.count_message(body[cut - 1]) <= room:
        cut -= 1
        room -= counter.count_message(body[cut])
    users = [i for i, m in enumerate(body) if role_of(m) == "user"]
    later = [i for i in users if i >= cut]
    cut = later[0] if later else (users[-1] if users else cut)
    return head + [dict(m) for m in body[cut:]]


def request_key(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each message serialised canonically, for byte-prefix comparisons of requests."""
    return [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in messages]

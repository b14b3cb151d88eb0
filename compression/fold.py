"""Fold a span into the memory, chunk by chunk, through the summarizer or the extractor.

Every message of the span is read (SPEC 6.5): a span larger than one summarizer call goes in
consecutive chunks, each folded into the memory before the next is asked for. A reply that
cannot be used is replaced by the extractor for that chunk. A transient failure aborts unless
the caller cannot wait (`urgent`); then the extractor reads the rest and marks it for re-reading.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compactbot.compression.extract import BACKUP_MIN_WEIGHT, answered_by_bot, extract_update
from compactbot.compression.line_weight import text_weight
from compactbot.compression.memory import (
    Memory,
    MemoryEntry,
    MemoryUpdate,
    MessageSource,
    apply_update,
    norm_subject,
)
from compactbot.compression.memory_format import format_current, parse_reply
from compactbot.compression.message_hints import FEATURELESS, SHOWN_FEATURELESS, SHOWN_LIGHT, hinted
from compactbot.compression.provenance import Authors, attribute, member_authors
from compactbot.compression.redact import redact
from compactbot.compression.result import Outcome
from compactbot.compression.state import CooldownCause
from compactbot.compression.summarizer import (
    Summarizer,
    SummaryAuthError,
    SummaryNetworkError,
    SummaryRequest,
    SummaryTransientError,
)
from compactbot.compression.summary_chunks import SummaryView, summary_view, view_chunks

log = logging.getLogger(__name__)

# asyncio.TimeoutError is TimeoutError since 3.11; raw transport errors from any summarizer
# mean "could not reach it", which must keep the transcript (Hermes #29559).
NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    SummaryNetworkError,
    ConnectionError,
    TimeoutError,
)
ERROR_TEXT_CHARS = 200
# What the extractor backs up behind a summarizer: exact values (text_weight >= 3) of these.
BACKED_UP_KINDS = frozenset({"rule", "decision", "fact", "preference", "action"})


@dataclass(frozen=True, slots=True)
class Span:
    """Turns to read, with the source message id and send time of each, and what is known of
    each turn on its own (`hints`, see message_hints; None where nothing is); `authors` holds
    the authored sources of its members' turns, by id, shared by its chunks.

    The extractor reads the turns as they are (it redacts what it keeps); a summarizer gets
    `chunks()` of its view: redacted, truncated copies, and the turns shown as they are.
    """

    turns: list[Any]
    ids: list[str | None]
    times: list[float | None]
    hints: list[int | None] | None = None
    # The turns are the summarizer's view of the span's, of which SHOWN_FEATURELESS speaks.
    shown: bool = False
    authors: Authors = field(default_factory=dict)

    def chunks(
        self, max_chars: int, view: SummaryView | None = None
    ) -> list[tuple[Span, tuple[str, ...]]]:
        """The summarizer's chunks of this span (`view`: its summary_view, if made already),
        each with the participants it shows."""
        view = view or summary_view(self.turns, self.hints)
        hints = list(view.hints)  # the caller's, or what the view found out without them
        return [
            (
                Span(
                    c.turns,
                    self.ids[c.start : c.end],
                    self.times[c.start : c.end],
                    hints[c.start : c.end],
                    shown=True,
                    authors=self.authors,
                ),
                c.participants,
            )
            for c in view_chunks(view, max_chars)
        ]

    def featureless(self) -> list[bool] | None:
        """Which turns the hints show to have no features for the extractor."""
        if self.hints is None:
            return None
        bit = self._featureless_bit
        return [hint is not None and bool(hint & bit) for hint in self.hints]

    def readable(self) -> list[int] | None:
        """The indices of the turns the backup of exact values reads: those the hints do not
        show to be featureless, or (the summarizer's view) too light to back up."""
        if self.hints is None:
            return None
        light = SHOWN_LIGHT if self.shown else 0
        return hinted(self.hints, self._featureless_bit | light, clear=True)

    @property
    def _featureless_bit(self) -> int:
        return SHOWN_FEATURELESS if self.shown else FEATURELESS


@dataclass(frozen=True, slots=True)
class Ask:
    """What every summarizer call of one compaction shares."""

    focus_topic: str | None
    budget_tokens: int
    today: dt.date
    pins: tuple[str, ...]
    input_chars: int
    memory_chars: int
    language: str | None = None  # the chat's language for the summary (SPEC 6.5)


@dataclass(frozen=True, slots=True)
class Folded:
    """The new memory (None: abort, keep everything), the outcome and any failure."""

    memory: Memory | None
    outcome: Outcome
    error: str | None = None
    cause: CooldownCause | None = None
    extracted: bool = False  # the extractor replaced the summarizer for some of the span


def extract_all(memory: Memory, spans: Sequence[Span], today: dt.date) -> Memory:
    """The deterministic path: every span folded in by the extractor."""
    for span in spans:
        empty = span.featureless()
        update = extract_update(span.turns, span.ids, span.times, today=today, empty=empty)
        memory = _fold_in(memory, update, span)
    return memory


def _fold_in(memory: Memory, update: MemoryUpdate, span: Span) -> Memory:
    """`memory` with `update` from `span` folded in, its entries attributed to their authors."""
    return apply_update(memory, attribute(update, span.authors))


def fold_in_cooldown(
    memory: Memory,
    span: Span,
    cause: CooldownCause | None,
    *,
    urgent: bool,
    abort: bool,
    today: dt.date,
) -> Folded:
    """While the summarizer cools down: wait (abort) for auth, network and transient causes
    unless the caller cannot; otherwise the extractor, marking what the model must re-read."""
    waits = cause in ("transient", "network") and not urgent
    if cause == "auth" or waits or abort:
        return Folded(None, "aborted", f"summarizer cooling down ({cause})")
    memory = extract_all(memory, [span], today)
    if cause in ("transient", "network"):
        memory = memory.with_reread(i for i in span.ids if i)
    return Folded(memory, "fallback", extracted=True)


async def fold(
    summarizer: Summarizer,
    memory: Memory,
    reread: Span | None,
    span: Span,
    ask: Ask,
    *,
    urgent: bool,
    abort_on_failure: bool,
    view: SummaryView | None = None,
) -> Folded:
    """Re-read marked spans first, then the new span (`view`: its summary_view, if made
    already); every chunk folds into `memory`."""
    # Each step's CPU work (chunking, reading the reply, the extractor) runs off the event loop.
    pending = await asyncio.to_thread(
        lambda: [
            *(reread.chunks(ask.input_chars) if reread else []),
            *span.chunks(ask.input_chars, view),
        ]
    )
    reread_ids = {i for i in (reread.ids if reread else []) if i}
    failure: Folded | None = None
    for position, (chunk, names) in enumerate(pending):
        shown = await asyncio.to_thread(format_current, memory, max_chars=ask.memory_chars)
        request = SummaryRequest(
            turns=chunk.turns,
            # Summarizers written before the memory read the current entries here.
            previous_summary=shown,
            focus_topic=ask.focus_topic,
            budget_tokens=ask.budget_tokens,
            today=ask.today,
            participants=names,
            pins=ask.pins,
            memory=shown or "",
            language=ask.language,
        )
        cause: CooldownCause
        try:
            text = await summarizer.summarize(request)
        except SummaryAuthError as exc:
            return Folded(None, "aborted", describe(exc), "auth")
        except SummaryTransientError as exc:
            cause, error = "transient", describe(exc)
        except NETWORK_ERRORS as exc:
            cause, error = "network", describe(exc)
        except Exception as exc:  # any other summarizer bug degrades to the extractor
            cause, error = "other", describe(exc)
        else:
            folded = await asyncio.to_thread(_read_reply, memory, text, chunk, names, ask.today)
            if folded is not None:
                memory = folded
                continue
            # A proxy answering 200 with empty content must not wipe the middle (#11978).
            cause, error = "other", "summarizer returned an empty or unusable summary"
        waits = cause in ("transient", "network") and not urgent
        if waits or abort_on_failure:
            return Folded(None, "aborted", error, cause)
        rest = [chunk for chunk, _ in pending[position:]]
        memory = await asyncio.to_thread(extract_all, memory, rest, ask.today)
        if cause in ("transient", "network"):
            # Read by the extractor only because the model could not be waited for: the next
            # successful LLM compaction reads these messages again (SPEC 6.11).
            marked = [i for c in rest for i in c.ids if i]
            memory = memory.with_reread(marked)
        failure = Folded(memory, "fallback", error, cause, extracted=True)
        log.warning("summarizer failed, extractor folded %d chunk(s): %s", len(rest), cause)
        break
    if failure is not None:
        return failure
    if reread_ids:
        memory = Memory(memory.entries, tuple(i for i in memory.reread if i not in reread_ids))
    return Folded(memory, "compressed")


def _read_reply(
    memory: Memory, text: object, chunk: Span, names: tuple[str, ...], today: dt.date
) -> Memory | None:
    """`memory` with the summarizer's reply on `chunk` folded in; None for an unusable reply."""
    if not isinstance(text, str):
        return None
    update = parse_reply(redact(text), chunk.turns, chunk.ids, today)
    if update is None:
        return None
    memory = _fold_in(memory, update, chunk)
    return _fold_in(memory, _backup(update, chunk, names, today), chunk)


def _backup(
    update: MemoryUpdate, chunk: Span, names: tuple[str, ...], today: dt.date
) -> MemoryUpdate:
    """The extractor's exact values from messages the reply did not cite: a summarizer that
    drops a value, or a newer value of a subject, cannot make the memory forget it."""
    cited = {source for entry in update.additions for source in entry.sources}
    # A subject the reply wrote a value for is the reply's: an older value the extractor saw
    # in the same chunk must not replace it.
    subjects = {norm_subject(entry.subject) for entry in update.additions if entry.subject}
    kept = tuple(
        entry
        for entry in _backup_candidates(chunk, names, today)
        if entry.kind in BACKED_UP_KINDS
        and not (set(entry.sources) & cited)
        and (entry.subject is None or norm_subject(entry.subject) not in subjects)
        and text_weight(entry.text) >= BACKUP_MIN_WEIGHT
    )
    return MemoryUpdate(additions=kept)


def _backup_candidates(
    chunk: Span, names: tuple[str, ...], today: dt.date
) -> tuple[MemoryEntry, ...]:
    """The extractor's entries for the chunk's turns that can hold a candidate: only those
    count for a backup, and a turn whose hint says it has no features holds none."""
    readable = chunk.readable()
    answered = answered_by_bot(chunk.turns)  # before the turns without features are left out
    if readable is None:
        turns, ids, times = chunk.turns, chunk.ids, chunk.times
    else:
        read = [i for i in readable if chunk.turns[i].get("role") in ("user", "assistant")]
        if not read:
            return ()
        turns = [chunk.turns[i] for i in read]
        ids = [chunk.ids[i] for i in read]
        times = [chunk.times[i] for i in read]
        answered = [answered[i] for i in read]
    # The chunk's participants: who an action can be for, as if every turn had been read (its
    # view named every speaker of its turns).
    extracted = extract_update(
        turns, ids, times, today=today, min_weight=BACKUP_MIN_WEIGHT, speakers=names,
        all_named=True, answered=answered,
    )  # fmt: skip
    return extracted.additions


def describe(exc: BaseException) -> str:
    """A short error for the result; redacted because SDK errors may echo a key fragment."""
    return redact(f"{type(exc).__name__}: {exc}")[:ERROR_TEXT_CHARS]


def middle_span(
    pruned: list[Mapping[str, Any]],
    start: int,
    end: int,
    changed: set[int],
    origin: Sequence[int],
    hints: Sequence[int | None] | None,
    sources: Sequence[MessageSource | None] | None,
) -> Span:
    """`pruned[start:end]` to summarise, with each message's source (by its `origin` in the
    caller's list) and the hints still true of it (none for a message prune `changed`)."""
    if sources is None:
        ids: list[str | None] = [None] * (end - start)
        times: list[float | None] = [None] * (end - start)
        authors: Authors = {}
    else:
        found = [_source(sources, origin[i]) for i in range(start, end)]
        ids = [s.id if s else None for s in found]
        times = [s.at if s else None for s in found]
        authors = member_authors(pruned[start:end], found)
    kept = None
    if hints is not None:
        kept = list(hints[start:end])
        for index in changed:
            if start <= index < end:
                kept[index - start] = None
    return Span(pruned[start:end], ids, times, kept, authors=authors)


def _source(sources: Sequence[MessageSource | None], index: int) -> MessageSource | None:
    return sources[index] if index < len(sources) else None

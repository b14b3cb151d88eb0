"""What forgetting changes (SPEC 16), the same on every backend: a plan from the rows read.

The forgotten rows are deleted, except a compaction's copy of a kept message with the summary
merged into it: that keeps the summary alone, cut loose from the message. Memory entries built
from them (citing them, quoting them, or, unattributed, sharing their rarest words) are dropped,
every summary, bot reply and tool result of the chat loses the lines that quote a forgotten
text or a dropped entry, and a member's reply loses its quote of a forgotten message.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from compactbot.bot.store.merged_copies import merged_rewrite
from compactbot.bot.store.reply_quotes import without_quotes_of
from compactbot.bot.store.rows import decode_content
from compactbot.compression.memory import Memory, MemoryEntry, norm_text
from compactbot.compression.memory_format import source_words
from compactbot.compression.template import MERGE_DELIMITER
from compactbot.compression.transcript import content_text, split_speaker

# A shorter text ("ok", "thanks") is no evidence that a line quotes it.
MIN_NEEDLE_CHARS = 6
# Rows whose text may repeat what a member wrote: summaries, the bot's replies, tool results.
REWRITTEN_ROLES = ("assistant", "tool")


@dataclass(frozen=True, slots=True)
class TargetRow:
    """A row being forgotten."""

    id: int
    session_id: int
    active: bool
    tokens: int
    text: str
    content: str | None = None  # as stored: a summary may be merged into it
    content_format: str = "text"


@dataclass(frozen=True, slots=True)
class TextRow:
    """A summary, bot reply or tool result that may quote a forgotten text."""

    id: int
    session_id: int
    active: bool
    tokens: int
    content: str | None
    content_format: str
    # A member's message is only read for its quote of a forgotten one (reply_quotes): a value
    # that member restated is that member's own message.
    members: bool = False


@dataclass(frozen=True, slots=True)
class Rewrite:
    id: int
    session_id: int
    content: str
    content_format: str
    tokens: int
    # A merged copy left with its summary alone: no longer the member's message (its platform
    # id, author and revisions go).
    detach: bool = False


@dataclass(slots=True)
class ForgetPlan:
    deleted: list[int] = field(default_factory=list)
    # session id -> (tokens, messages) to subtract from its live totals
    totals: dict[int, tuple[int, int]] = field(default_factory=dict)
    memories: dict[int, Memory] = field(default_factory=dict)
    rewrites: list[Rewrite] = field(default_factory=list)
    previous_summaries: dict[int, str | None] = field(default_factory=dict)
    # The forgotten texts (a member's words only), and the lines that quote them or a dropped
    # entry (normalised): what a queue of turns or replies must not keep either.
    texts: list[str] = field(default_factory=list)
    needles: list[str] = field(default_factory=list)

    @property
    def sessions(self) -> set[int]:
        """Sessions whose transcript or memory changed: their version moves on."""
        found = set(self.totals) | set(self.memories) | set(self.previous_summaries)
        return found | {r.session_id for r in self.rewrites}


def plan(
    targets: Sequence[TargetRow],
    memories: Mapping[int, Memory],
    text_rows: Iterable[TextRow],
    previous_summaries: Mapping[int, str | None],
) -> ForgetPlan:
    """Everything to change so that no forgotten text survives anywhere the model reads."""
    result = ForgetPlan()
    gone = {t.id for t in targets}
    summaries: dict[int, TextRow] = {}  # merged copies: the summary each keeps
    texts: list[str] = []
    for target in targets:
        kept = merged_rewrite(target.content, target.content_format, None)
        if kept is None:
            result.deleted.append(target.id)
            texts.append(target.text)
            removed = target.tokens
        else:
            body = content_text(decode_content(kept.text, kept.content_format))
            # The member's words only: the summary and the line that joins them stay quotable.
            texts.append(target.text.replace(body, "").replace(MERGE_DELIMITER.strip(), ""))
            row = TextRow(
                target.id, target.session_id, target.active, 0, kept.text, kept.content_format
            )
            summaries[target.id] = replace(row, tokens=_share(target.tokens, kept.text, target))
            removed = target.tokens - summaries[target.id].tokens
        if target.active:
            tokens, count = result.totals.get(target.session_id, (0, 0))
            result.totals[target.session_id] = (tokens + removed, count + (kept is None))
    base = needles_of(texts)
    needles: dict[int, list[str]] = {}
    for session_id, memory in memories.items():
        kept_memory, dropped = scrub_memory(memory, {str(i) for i in gone}, texts, base)
        needles[session_id] = base + needles_of(e.text for e in dropped)
        if kept_memory != memory:
            result.memories[session_id] = kept_memory
    for row in summaries.values():
        cleaned = scrub_row(row, needles.get(row.session_id, base))
        final = cleaned or Rewrite(
            row.id, row.session_id, row.content or "", row.content_format, row.tokens
        )
        result.rewrites.append(replace(final, detach=True))
        if row.active and cleaned is not None:
            tokens, count = result.totals[row.session_id]
            result.totals[row.session_id] = (tokens + row.tokens - cleaned.tokens, count)
    for row in text_rows:
        if row.id in gone:
            continue
        if row.members:
            rewrite = rewritten(row, lambda text: without_quotes_of(text, texts))
        else:
            rewrite = scrub_row(row, needles.get(row.session_id, base))
        if rewrite is None:
            continue
        result.rewrites.append(rewrite)
        if row.active:
            tokens, count = result.totals.get(row.session_id, (0, 0))
            result.totals[row.session_id] = (tokens + row.tokens - rewrite.tokens, count)
    for session_id, summary in previous_summaries.items():
        if summary is not None:
            scrubbed = scrub_text(summary, needles.get(session_id, base))
            if scrubbed != summary:
                result.previous_summaries[session_id] = scrubbed or None
    result.texts = texts
    result.needles = list(dict.fromkeys([*base, *(n for found in needles.values() for n in found)]))
    return result


def _share(tokens: int, content: str, target: TargetRow) -> int:
    """A part's tokens, proportional to its characters: a compaction recounts exactly."""
    return math.ceil(tokens * len(content) / max(1, len(target.content or "")))


def needles_of(texts: Iterable[str]) -> list[str]:
    """The normalised lines of `texts` long enough to recognise when quoted."""
    found: list[str] = []
    for text in texts:
        for line in text.splitlines():
            # What was said, without the "[name] " a summary line writes differently.
            norm = norm_text(split_speaker(line)[1])
            if len(norm) >= MIN_NEEDLE_CHARS and norm not in found:
                found.append(norm)
    return found


def scrub_memory(
    memory: Memory, gone: set[str], texts: Sequence[str], needles: Sequence[str]
) -> tuple[Memory, list[MemoryEntry]]:
    """The memory without entries built from forgotten rows, and the entries dropped."""
    dropped = [e for e in memory.entries if _built_from(e, gone, texts, needles)]
    if not dropped and not gone & set(memory.reread):
        return memory, []
    dropped_ids = {e.id for e in dropped}
    kept: list[MemoryEntry] = []
    for entry in memory.entries:
        if entry.id in dropped_ids:
            continue
        if entry.superseded_by in dropped_ids:
            # The value that replaced it is forgotten: it is the latest one known again.
            entry = replace(entry, status="current", superseded_by=None)
        kept.append(entry)
    reread = tuple(i for i in memory.reread if i not in gone)
    return Memory(tuple(kept), reread), dropped


def _built_from(
    entry: MemoryEntry, gone: set[str], texts: Sequence[str], needles: Sequence[str]
) -> bool:
    if gone & set(entry.sources):
        return True
    norm = norm_text(entry.text)
    if any(needle in norm for needle in needles):
        return True
    if entry.sources or entry.kind == "participant":
        return False
    # Unattributed: the summarizer's own rule for finding sources (its two longest words).
    words = source_words(entry.text)
    return bool(words) and any(all(w in text for w in words) for text in texts)


def scrub_text(text: str, needles: Sequence[str]) -> str:
    """`text` without the lines that quote a needle."""
    if not needles:
        return text
    lines = text.split("\n")
    kept = [line for line in lines if not _quotes(line, needles)]
    return text if len(kept) == len(lines) else "\n".join(kept)


def _quotes(line: str, needles: Sequence[str]) -> bool:
    norm = norm_text(line)
    return bool(norm) and any(needle in norm for needle in needles)


def scrub_row(row: TextRow, needles: Sequence[str]) -> Rewrite | None:
    """The row's content without quoting lines, or None when it quotes nothing."""
    if not needles:
        return None
    return rewritten(row, lambda text: scrub_text(text, needles))


def rewritten(row: TextRow, change: Callable[[str], str]) -> Rewrite | None:
    """The row with `change` made to each of its texts, or None when that changes nothing."""
    if row.content is None:
        return None
    if row.content_format == "json":
        parts = json.loads(row.content)
        changed = _changed_parts(parts, change)
        if changed is None:
            return None
        content: str = json.dumps(changed, ensure_ascii=False)
    else:
        content = change(row.content)
        if content == row.content:
            return None
    # The exact count needs the tokenizer; proportional is close, and a compaction recounts.
    tokens = math.ceil(row.tokens * len(content) / max(1, len(row.content)))
    return Rewrite(row.id, row.session_id, content, row.content_format, tokens)


def _changed_parts(parts: Any, change: Callable[[str], str]) -> Any | None:
    if not isinstance(parts, list):
        return None
    changed = False
    out: list[Any] = []
    for part in parts:
        if isinstance(part, dict) and isinstance(part.get("text"), str):
            text = change(part["text"])
            if text != part["text"]:
                part = {**part, "text": text}
                changed = True
        out.append(part)
    return out if changed else None

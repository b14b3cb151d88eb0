"""The summary message rendered from the memory's current entries, within a budget (SPEC 6.11)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from compactbot.compression import template as t
from compactbot.compression.line_weight import text_weight
from compactbot.compression.memory import EntryKind, Memory, MemoryEntry, norm_text

# Most salient first: the latest ask, who is here, then rules, decisions, open actions, values.
_BASE_SALIENCE: dict[EntryKind, int] = {
    "participant": 30,
    "rule": 9,
    "decision": 9,
    "action": 9,
    "fact": 8,
    "preference": 9,
    "narrative": 7,
    "link": 4,
    "question": 2,
    "tool": 3,
    "topic": 3,
}
LATEST_ASK_SALIENCE = 40
MAX_CHARS_PER_TOKEN = 8
_HEADINGS: dict[EntryKind, str] = {
    "participant": t.HEADING_PARTICIPANTS,
    "preference": t.HEADING_PARTICIPANTS,
    "topic": t.HEADING_TOPICS,
    "narrative": t.HEADING_TOPICS,
    "decision": t.HEADING_DECISIONS,
    "action": t.HEADING_ACTION_ITEMS,
    "rule": t.HEADING_RULES,
    "fact": t.HEADING_KEY_FACTS,
    "link": t.HEADING_LINKS,
    "tool": t.HEADING_TOOL_WORK,
}
PARTICIPANTS_PREFIX = "Seen in this chat: "
UNAVAILABLE_NOTE = (
    "Note: automatic summary was unavailable for the newest turns; their entries were extracted "
    "without an LLM and quote the chat. Verify current state before acting."
)
MEMORY_NOTE = "Quoted from the chat with speaker and date; newer messages win."
MORE_NOTE = "{count} more remembered entries are not shown: look them up with the recall tool."


@dataclass(frozen=True, slots=True)
class Rendered:
    body: str
    shown: int
    hidden: int


def render_memory(
    memory: Memory,
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    unavailable: bool = False,
    max_chars: int | None = None,
    reserved_tokens: int = 0,
) -> Rendered:
    """The summary body: current entries, most salient first, within the budgets given.
    `count_tokens` counts at most a text's UTF-8 bytes, as every byte-level BPE does."""
    # Bounded first: when every entry fits at its byte length, exact counts (never more)
    # cannot hide one, and the tokenizer runs only when the budget is tight.
    at_most = _rendered(memory, budget_tokens, utf8_bytes, unavailable, max_chars, reserved_tokens)
    if not at_most.hidden:
        return at_most
    return _rendered(memory, budget_tokens, count_tokens, unavailable, max_chars, reserved_tokens)


def utf8_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _rendered(
    memory: Memory,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    unavailable: bool,
    max_chars: int | None,
    reserved_tokens: int,
) -> Rendered:
    note = UNAVAILABLE_NOTE if unavailable else MEMORY_NOTE
    entries = memory.current()
    people = [e for e in entries if e.kind == "participant"]
    others = [e for e in entries if e.kind != "participant"]
    room = budget_tokens - reserved_tokens - count_tokens(note) - count_tokens(MORE_NOTE) - 8
    chars_room = (max_chars - len(note) - len(MORE_NOTE) - 8) if max_chars else None
    chosen: list[tuple[MemoryEntry, str]] = []
    seen: set[str] = set()
    if people:
        line = PARTICIPANTS_PREFIX + ", ".join(e.text for e in people)
        room -= count_tokens(line) + 1
        if chars_room is not None:
            chars_room -= len(line) + 1
        chosen.append((people[0], line))
    hidden = 0
    for entry in sorted(others, key=lambda e: (-salience(e), -e.id)):
        line = entry_line(entry)
        key = norm_text(entry.text)
        if key in seen:
            continue
        # No tokenizer call for a line that cannot fit: a token spans at most ~8 characters.
        if len(line) // MAX_CHARS_PER_TOKEN > room:
            hidden += 1
            continue
        cost = count_tokens(line) + 1
        if cost > room or (chars_room is not None and len(line) + 1 > chars_room):
            hidden += 1
            continue
        seen.add(key)
        room -= cost
        if chars_room is not None:
            chars_room -= len(line) + 1
        chosen.append((entry, line))
    lines = [note]
    by_heading: dict[str, list[tuple[MemoryEntry, str]]] = {}
    for entry, line in sorted(chosen, key=lambda pair: pair[0].id):
        by_heading.setdefault(heading_of(entry), []).append((entry, line))
    for heading in t.SECTION_HEADINGS:
        items = by_heading.get(heading)
        if items:
            lines += ["", heading, *(line for _, line in items)]
    if hidden:
        lines += ["", MORE_NOTE.format(count=hidden)]
    return Rendered("\n".join(lines), len(chosen), hidden)


def salience(entry: MemoryEntry) -> int:
    if entry.kind == "topic" and entry.subject == "latest ask":
        return LATEST_ASK_SALIENCE
    base = _BASE_SALIENCE[entry.kind]
    if entry.status in ("done", "resolved"):
        base -= 4
    if entry.speaker == "assistant":
        base -= 1
    if entry.origin == "extractor":
        base -= 1  # beside a summarizer's entries, the extractor's backups rank lower
    if entry.subject:
        base += 1  # "<subject> is <value>": the shape of the facts summaries lose first
    return base + text_weight(entry.text)


def heading_of(entry: MemoryEntry) -> str:
    if entry.kind == "question":
        return t.HEADING_RESOLVED if entry.status == "resolved" else t.HEADING_OPEN_QUESTIONS
    if entry.kind == "topic" and entry.subject == "latest ask":
        return t.HEADING_LATEST_ASK
    return _HEADINGS[entry.kind]


def entry_line(entry: MemoryEntry) -> str:
    """One bullet: who said it and when, the text verbatim, and an item's state."""
    if entry.kind == "participant":
        return f"- {entry.text}"
    tag_parts = [p for p in (entry.speaker, entry.date) if p]
    tag = f"[{', '.join(tag_parts)}] " if tag_parts and entry.kind not in ("tool",) else ""
    text = f"- {tag}{entry.text}"
    if entry.kind == "action":
        state = (
            f"done on {entry.closed_on}"
            if entry.status == "done" and entry.closed_on
            else ("done" if entry.status == "done" else "open")
        )
        details = [
            f"owner {entry.owner}" if entry.owner else "",
            f"due {entry.due}" if entry.due else "",
            state,
        ]
        text += f" ({', '.join(d for d in details if d)})"
    elif entry.kind == "question" and entry.status == "resolved":
        text += f" — answer: {entry.answer}" if entry.answer else " — answered"
    return text


def counts_line(counts: Sequence[tuple[str, int]]) -> str:
    """ "3 rules, 2 decisions" for /status."""
    return ", ".join(f"{n} {kind}{'' if n == 1 else 's'}" for kind, n in counts)

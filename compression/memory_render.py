"""The summary message rendered from the memory's current entries, by importance (SPEC 6.11).

Pins come first, then the tiers below, most important first and newest first within each.
Once an entry of a tier does not fit, no entry of a lower tier is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from compactbot.compression import template as t
from compactbot.compression.memory import Memory, MemoryEntry, norm_text

MAX_CHARS_PER_TOKEN = 8
# Tiers 0-2 (rules, preferences, open action items) are the must-show kinds, pins aside.
RULE_TIER, PREFERENCE_TIER, OPEN_ACTION_TIER, OPEN_QUESTION_TIER, PARTICIPANTS_TIER = range(5)
DECISION_TIER, FACT_TIER, LINK_TIER, TOOL_TIER, NOTE_TIER = range(5, 10)
MUST_SHOW_TIERS = OPEN_ACTION_TIER + 1
# Sections in the order of the most important tier each holds.
_SECTION_ORDER: tuple[str, ...] = (
    t.HEADING_PINS,
    t.HEADING_RULES,
    t.HEADING_PARTICIPANTS,
    t.HEADING_ACTION_ITEMS,
    t.HEADING_OPEN_QUESTIONS,
    t.HEADING_DECISIONS,
    t.HEADING_RESOLVED,
    t.HEADING_KEY_FACTS,
    t.HEADING_LINKS,
    t.HEADING_TOOL_WORK,
    t.HEADING_LATEST_ASK,
    t.HEADING_TOPICS,
)
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
    must_show_hidden: int = 0  # rules, preferences, open action items left out for lack of room


@dataclass(frozen=True, slots=True)
class _Item:
    tier: int
    heading: str
    line: str
    entry: MemoryEntry


def render_memory(
    memory: Memory,
    *,
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    unavailable: bool = False,
    max_chars: int | None = None,
    pins: Sequence[str] = (),
) -> Rendered:
    """The summary body within the budgets given; pins are always shown, verbatim.
    `count_tokens` counts at most a text's UTF-8 bytes, as every byte-level BPE does."""
    items = ordered_items(memory)
    # Bounded first: when every entry fits at its byte length, exact counts (never more)
    # cannot hide one, and the tokenizer runs only when the budget is tight.
    at_most = _rendered(items, budget_tokens, utf8_bytes, unavailable, max_chars, pins)
    if not at_most.hidden:
        return at_most
    return _rendered(items, budget_tokens, count_tokens, unavailable, max_chars, pins)


def must_show_tokens(memory: Memory, *, count_tokens: Callable[[str], int]) -> int:
    """The budget that shows every must-show entry, as `render_memory` counts; the pins'
    section adds `pins_tokens` (pins never share a heading with an entry)."""
    items = ordered_items(memory)
    fixed = _body([], UNAVAILABLE_NOTE, (), hidden=len(items))  # the longer note
    headings: set[str] = set()
    need = count_tokens(fixed)
    for item in items:
        if item.tier < MUST_SHOW_TIERS:
            need += _cost(item, item.heading not in headings, count_tokens)
            headings.add(item.heading)
    return need


def pins_tokens(pins: Sequence[str], *, count_tokens: Callable[[str], int]) -> int:
    """What the pins' section adds to the summary."""
    if not pins:
        return 0
    return count_tokens("\n".join(["", t.HEADING_PINS, *t.pin_lines(pins)]))


def utf8_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def ordered_items(memory: Memory) -> list[_Item]:
    """The current entries as lines, most important first; identical texts are one entry
    (the most important of them) with all their sources."""
    by_text: dict[str, MemoryEntry] = {}
    people: list[MemoryEntry] = []
    for entry in sorted(memory.current(), key=lambda e: (tier_of(e), -e.id)):
        if entry.kind == "participant":
            people.append(entry)
            continue
        key = norm_text(entry.text)
        kept = by_text.get(key)
        if kept is None:
            by_text[key] = entry
        elif not set(entry.sources) <= set(kept.sources):
            by_text[key] = replace(kept, sources=tuple(dict.fromkeys(kept.sources + entry.sources)))
    items = [_Item(tier_of(e), heading_of(e), entry_line(e), e) for e in by_text.values()]
    if people:
        line = PARTICIPANTS_PREFIX + ", ".join(e.text for e in sorted(people, key=lambda e: e.id))
        items.append(_Item(PARTICIPANTS_TIER, t.HEADING_PARTICIPANTS, line, people[0]))
    items.sort(key=lambda item: item.tier)  # stable: newest first within a tier
    return items


def _rendered(
    items: Sequence[_Item],
    budget_tokens: int,
    count_tokens: Callable[[str], int],
    unavailable: bool,
    max_chars: int | None,
    pins: Sequence[str],
) -> Rendered:
    note = UNAVAILABLE_NOTE if unavailable else MEMORY_NOTE
    fixed = _body([], note, pins, hidden=len(items))
    room = budget_tokens - count_tokens(fixed)
    chars_room = max_chars - len(fixed) if max_chars else None
    chosen: list[_Item] = []
    headings = {t.HEADING_PINS} if pins else set()
    hidden = must_show_hidden = 0
    closed_below: int | None = None  # a tier that hid an entry: no lower tier is shown
    for item in items:
        new_heading = item.heading not in headings
        cost_chars = len(item.line) + 1 + (len(item.heading) + 2 if new_heading else 0)
        if not _fits(item, closed_below, cost_chars, room, chars_room):
            cost = None
        else:
            cost = _cost(item, new_heading, count_tokens)
        if cost is None or cost > room:
            hidden += 1
            must_show_hidden += item.tier < MUST_SHOW_TIERS
            closed_below = item.tier if closed_below is None else closed_below
            continue
        room -= cost
        if chars_room is not None:
            chars_room -= cost_chars
        headings.add(item.heading)
        chosen.append(item)
    body = _body(chosen, note, pins, hidden)
    return Rendered(body, len(chosen), hidden, must_show_hidden)


def _cost(item: _Item, new_heading: bool, count_tokens: Callable[[str], int]) -> int:
    return count_tokens(item.line) + 1 + (count_tokens(item.heading) + 2 if new_heading else 0)


def _fits(
    item: _Item, closed_below: int | None, chars: int, room: int, chars_room: int | None
) -> bool:
    """Whether a line may still be shown, before its tokens are counted."""
    if closed_below is not None and item.tier > closed_below:
        return False
    if chars_room is not None and chars > chars_room:
        return False
    # A token spans at most ~8 characters: a line this long cannot fit.
    return chars // MAX_CHARS_PER_TOKEN <= room


def _body(chosen: Sequence[_Item], note: str, pins: Sequence[str], hidden: int) -> str:
    sections: dict[str, list[str]] = {}
    if pins:
        sections[t.HEADING_PINS] = t.pin_lines(pins)
    for item in chosen:
        sections.setdefault(item.heading, []).append(item.line)
    lines = [note]
    for heading in _SECTION_ORDER:
        if heading in sections:
            lines += ["", heading, *sections[heading]]
    if hidden:
        lines += ["", MORE_NOTE.format(count=hidden)]
    return "\n".join(lines)


def tier_of(entry: MemoryEntry) -> int:
    """Where an entry ranks in the order of importance; a lower number is shown first."""
    kind, current = entry.kind, entry.status == "current"
    if kind == "rule":
        return RULE_TIER
    if kind == "preference":
        return PREFERENCE_TIER
    if kind == "action":
        return OPEN_ACTION_TIER if current else DECISION_TIER
    if kind == "question":
        return OPEN_QUESTION_TIER if current else DECISION_TIER
    if kind == "participant":
        return PARTICIPANTS_TIER
    return {"decision": DECISION_TIER, "fact": FACT_TIER, "link": LINK_TIER}.get(
        kind, TOOL_TIER if kind == "tool" else NOTE_TIER
    )


def heading_of(entry: MemoryEntry) -> str:
    if entry.kind == "question":
        return t.HEADING_RESOLVED if entry.status == "resolved" else t.HEADING_OPEN_QUESTIONS
    if entry.kind == "topic" and entry.subject == "latest ask":
        return t.HEADING_LATEST_ASK
    return _HEADINGS[entry.kind]


_HEADINGS: dict[str, str] = {
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

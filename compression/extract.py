"""The deterministic extractor (SPEC 6.6, 6.11): a span's memory entries without an LLM."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from compactbot.compression.features import (
    NO_FEATURES,
    Candidate,
    Features,
    action_owner,
    message_features,
)
from compactbot.compression.line_weight import text_weight
from compactbot.compression.memory import MemoryEntry, MemoryUpdate
from compactbot.compression.redact import redact
from compactbot.compression.salient import clip
from compactbot.compression.tool_targets import tool_references, tool_target
from compactbot.compression.transcript import (
    content_text,
    speaker_of_opening,
    split_speaker,
    strip_think,
    tool_call_parts,
    turn_date,
)

OPEN_QUESTIONS_PER_SPAN = 5
# Routine calls of a span kept in the memory (the newest); failed ones are always kept.
DONE_TOOL_CALLS_PER_SPAN = 16
LATEST_ASK_MAX_CHARS = 600
# What a line must weigh for the backup of exact values to keep it (fold._backup).
BACKUP_MIN_WEIGHT = 3
READ_LIMIT_CHARS, READ_HEAD_CHARS, READ_TAIL_CHARS = 6_000, 4_000, 1_500
LATEST_ASK_SUBJECT = "latest ask"
_ERROR_WORDS = ("error", "failed", "failure", "exception", "traceback", "timed out", "fatal")


@dataclass(frozen=True, slots=True)
class _Call:
    call_id: str
    date: str | None
    sources: tuple[str, ...]


def extract_update(
    turns: Sequence[Mapping[str, Any]],
    ids: Sequence[str | None],
    times: Sequence[float | None],
    *,
    today: dt.date,
    min_weight: int = 0,
    empty: Sequence[bool] | None = None,
    speakers: Sequence[str] = (),
    all_named: bool = False,
    answered: Sequence[bool] | None = None,
) -> MemoryUpdate:
    """Entries for `turns` (redacted here); `ids` and `times` are their sources, one per turn.

    `min_weight` > 1: only candidates that weigh that much are kept.
    `empty[i]` True: turn i is known to have no features (`read_features` is NO_FEATURES).
    `speakers`: names known to take part besides those of `turns` (who an action can be for);
    `all_named`: they hold every speaker of `turns`, so a turn known to hold nothing is not read.
    `answered[i]`: the bot replied to turn i (default: read from the turn after it)."""
    replied = answered_by_bot(turns) if answered is None else answered
    names: dict[str, None] = dict.fromkeys(speakers)
    found_in: list[tuple[Candidate, str, str | None, tuple[str, ...]]] = []
    additions: list[MemoryEntry] = []
    questions: list[MemoryEntry] = []
    failed: set[str] = set()
    calls: dict[tuple[str, str], _Call] = {}
    last_ask: tuple[str, str, Mapping[str, Any], str | None, float | None] | None = None
    read: dict[str, Features] = {}  # repeated lines ("ok", "thanks") read once
    unread: list[tuple[Mapping[str, Any], str | None, float | None]] = []
    openings: dict[str, str | None] = {}
    for index, (turn, source, at) in enumerate(zip(turns, ids, times, strict=True)):
        role = turn.get("role")
        if role == "tool":
            head = content_text(turn.get("content"))[:300].lower()
            if any(word in head for word in _ERROR_WORDS):
                failed.add(str(turn.get("tool_call_id")))
            continue
        if role not in ("user", "assistant"):
            continue
        if not turn.get("tool_calls") and (
            role == "assistant" or (empty[index] if empty is not None else False)
        ):
            # The bot's own words, or known to hold nothing: only who spoke counts, and a
            # user's text once it is known to be the span's last ask (read at the end).
            if role == "user":
                if not all_named:
                    text = _readable(content_text(turn.get("content")))
                    name = speaker_of_opening(text.lstrip(), openings)
                    if name:
                        names.setdefault(name)
                unread.append((turn, source, at))
            continue
        text, name = read_turn(turn)
        speaker = "assistant"
        if role == "user":
            if name:
                names.setdefault(name)
            speaker = name or "user"
            if text.strip() and not is_command(text):
                last_ask = (text, speaker, turn, source, at)
                unread.clear()
        if not members_words(turn, text) or (empty is not None and empty[index]):
            if not turn.get("tool_calls"):
                continue
            features = NO_FEATURES
        else:
            memoised = read.get(text)
            features = read[text] = message_features(text, True) if memoised is None else memoised
            if min_weight > 1:
                features = _weighing(features, min_weight)
        tool_calls = turn.get("tool_calls")
        if not (features.candidates or features.links or features.questions or tool_calls):
            continue  # most lines: nothing to date or attribute
        sources = (source,) if source else ()
        date = _date(at) if at is not None else turn_date(turn)
        for found in features.candidates:
            if replied[index] and found.kind == "action" and not _for_a_member(found, names):
                continue  # asked of the bot, which answered: nothing left for anyone to do
            found_in.append((found, speaker, date, sources))
        for link in features.links:
            additions.append(
                MemoryEntry(
                    0,
                    "link",
                    f"{redact(link)} (shared by {speaker})",
                    speaker=speaker,
                    date=date,
                    sources=sources,
                )
            )
        for question in features.questions:
            questions.append(
                MemoryEntry(
                    0, "question", redact(question), speaker=speaker, date=date, sources=sources
                )
            )
        for call in tool_calls or ():
            name, arguments = tool_call_parts(call)
            key = (name or "tool", tool_target(arguments))
            for reference in tool_references(arguments):
                line = f"{redact(reference)} (in a {key[0]} call)"
                additions.append(MemoryEntry(0, "link", line, date=date, sources=sources))
            calls.pop(key, None)
            call_id = str(call.get("id")) if isinstance(call, Mapping) else ""
            calls[key] = _Call(call_id, date, sources)
    known = list(names)
    additions = [
        *(MemoryEntry(0, "participant", name, speaker=name) for name in known),
        *(
            _entry(found, speaker, date, sources, today, known)
            for found, speaker, date, sources in found_in
        ),
        *additions,
    ]
    done = [key for key, call in calls.items() if call.call_id not in failed]
    for key in done[: max(0, len(done) - DONE_TOOL_CALLS_PER_SPAN)]:
        del calls[key]  # a long span's routine calls must not flood the memory
    for (name, target), call in calls.items():
        outcome = "failed" if call.call_id in failed else "done"
        when = f"on {call.date}" if call.date else f"before {today.isoformat()}"
        text = f"Called {name}({target}) — {outcome} {when}"
        additions.append(MemoryEntry(0, "tool", text, date=call.date, sources=call.sources))
    additions += questions[-OPEN_QUESTIONS_PER_SPAN:]
    last_ask = _last_unread_ask(unread) or last_ask
    if last_ask is not None:
        additions.append(_latest_ask(*last_ask))
    return MemoryUpdate(additions=tuple(replace(e, origin="extractor") for e in additions))


def answered_by_bot(turns: Sequence[Mapping[str, Any]]) -> list[bool]:
    """For each turn: a member's message the bot's next turn replied to."""
    return [
        turn.get("role") == "user" and nxt.get("role") == "assistant"
        for turn, nxt in zip(turns, [*turns[1:], {}], strict=True)
    ]


def _for_a_member(found: Candidate, names: Mapping[str, None]) -> bool:
    return found.owner_hint in names or found.named_owner in names


def is_command(text: str) -> bool:
    """A bot command ("/pin …", "/summary"): addressed to the bot, never a member's fact or ask."""
    return text.lstrip().startswith("/")


def members_words(turn: Mapping[str, Any], text: str) -> bool:
    """Whether `text` (read_turn's) is what a member said: the bot's own replies and commands
    are neither members' facts nor their asks (SPEC 6.6)."""
    return turn.get("role") == "user" and not is_command(text)


def _last_unread_ask(
    unread: list[tuple[Mapping[str, Any], str | None, float | None]],
) -> tuple[str, str, Mapping[str, Any], str | None, float | None] | None:
    """The newest of the user turns not read, after the last ask read, that says something."""
    for turn, source, at in reversed(unread):
        text, name = read_turn(turn)
        if text.strip() and not is_command(text):
            return text, name or "user", turn, source, at
    return None


def too_light_for_backup(turn: Mapping[str, Any], features: Features | None = None) -> bool:
    """The backup of exact values keeps nothing of this user or assistant turn: no tool call,
    and no candidate that weighs BACKUP_MIN_WEIGHT. `features`: read_features(turn), if known."""
    if turn.get("role") not in ("user", "assistant") or turn.get("tool_calls"):
        return False
    found = read_features(turn) if features is None else features
    return not _weighing(found, BACKUP_MIN_WEIGHT).candidates


def _weighing(features: Features, min_weight: int) -> Features:
    """Only the candidates that weigh `min_weight` (what the backup keeps of a turn)."""
    kept = tuple(c for c in features.candidates if text_weight(c.text) >= min_weight)
    return replace(features, candidates=kept)


def read_turn(turn: Mapping[str, Any]) -> tuple[str, str | None]:
    """What the extractor reads of a user or assistant turn, and the user's name if any."""
    text = _readable(content_text(turn.get("content")))
    if turn.get("role") == "user":
        name, text = split_speaker(text.lstrip())
        return text, name
    return (strip_think(text) if "<" in text else text), None


def read_features(turn: Mapping[str, Any]) -> Features:
    """The features the extractor finds in the text of one turn (none in the bot's own)."""
    text = read_turn(turn)[0]
    return message_features(text, True) if members_words(turn, text) else NO_FEATURES


def _latest_ask(
    text: str, speaker: str, turn: Mapping[str, Any], source: str | None, at: float | None
) -> MemoryEntry:
    """The span's last user message: what the chat was on when the span ends."""
    return MemoryEntry(
        0,
        "topic",
        redact(clip(" ".join(text.split()), LATEST_ASK_MAX_CHARS)),
        subject=LATEST_ASK_SUBJECT,
        speaker=speaker,
        date=_date(at) if at is not None else turn_date(turn),
        sources=(source,) if source else (),
    )


def _readable(text: str) -> str:
    """A huge message keeps its head and tail, as the summarizer's copy does."""
    if len(text) <= READ_LIMIT_CHARS:
        return text
    return text[:READ_HEAD_CHARS] + "\n…\n" + text[-READ_TAIL_CHARS:]


def _date(at: float) -> str | None:
    try:
        return dt.datetime.fromtimestamp(at, tz=dt.UTC).date().isoformat()
    except (OverflowError, OSError, ValueError):
        return None


def _entry(
    found: Candidate,
    speaker: str,
    date: str | None,
    sources: tuple[str, ...],
    today: dt.date,
    names: Sequence[str],
) -> MemoryEntry:
    subject = found.subject
    if subject is not None and found.first_person:
        subject = f"{speaker}'s {subject}"
    owner = action_owner(found, speaker, names) if found.kind == "action" else None
    return MemoryEntry(
        0,
        found.kind,
        redact(found.text),
        subject=subject,
        speaker=speaker,
        date=date or (today.isoformat() if found.kind == "action" else None),
        sources=sources,
        owner=owner,
        due=found.due,
    )

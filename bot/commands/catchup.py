"""`/summary` (`/catchup`): "what did I miss", read-only, for the member who asks.

The span is chosen by the arguments: since the asker's last message (default), a duration
(`2h`, `30m`, `1d`), a member (`@name`: what they said) or a topic (anything else: the focus).
Its material comes through `CatchupSource`s: the chat's memory (the decisions, action items,
rules, facts and open questions its compactions kept, SPEC 6.11) and its transcript, archived
rows included. They are
summarised by the summary model, or by the deterministic summary when there is none or it fails.
Nothing is written: the session, its compressor state and the transcript stay as they were.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from compactbot.bot.commands.quoting import code_span
from compactbot.bot.ingress.limits import NoticeGate
from compactbot.bot.llm.metering import spending_for
from compactbot.bot.store.base import StoredMessage
from compactbot.bot.store.protocols.session_store import SessionStore
from compactbot.bot.store.protocols.transcript_store import TranscriptReads
from compactbot.compression.deterministic import deterministic_summary
from compactbot.compression.memory import MemoryEntry
from compactbot.compression.summarizer import Summarizer, SummaryError, SummaryRequest
from compactbot.compression.summary_input import chunk_turns, participants, summary_turns
from compactbot.compression.template import is_summary_text, summary_body

if TYPE_CHECKING:
    from compactbot.bot.services import Services

log = logging.getLogger(__name__)

# One digest per member per minute: each costs a summary-model call.
SUMMARY_INTERVAL_SECONDS = 60.0
# With no message of the asker's to start from, the digest covers this many recent messages.
DEFAULT_SPAN_MESSAGES = 300
MAX_SPAN_MESSAGES = 2_000
SUMMARY_BUDGET_TOKENS = 1_200
SUMMARY_INPUT_MAX_CHARS = 60_000
# Memory entries worth a digest: what was settled, asked and is still to be done.
MEMORY_KINDS = frozenset({"decision", "action", "rule", "fact", "question"})
_DURATION_RE = re.compile(r"^(\d{1,4})\s*(m|min|h|d)$", re.IGNORECASE)
_UNIT_SECONDS = {"m": 60, "min": 60, "h": 3600, "d": 86_400}


@dataclass(frozen=True, slots=True)
class CatchupQuery:
    """What the asker wants summarised."""

    since: float | None = None  # created_at lower bound
    author: str | None = None  # only what this member said
    topic: str | None = None
    label: str = "since your last message"


@dataclass(frozen=True, slots=True)
class CatchupSpan:
    turns: list[dict[str, Any]]
    count: int


class CatchupSource(Protocol):
    """Where digest material comes from; the transcript is one, a memory could be another."""

    async def turns(self, chat_key: str, query: CatchupQuery) -> list[dict[str, Any]]: ...


def parse_query(args: str, *, now: float, asker_last: float | None) -> CatchupQuery:
    """`""` | `2h` | `@name` | a topic → the span and focus of the digest."""
    text = args.strip()
    duration = _DURATION_RE.match(text)
    if duration:
        seconds = int(duration.group(1)) * _UNIT_SECONDS[duration.group(2).lower()]
        return CatchupQuery(since=now - seconds, label=f"in the last {text}")
    if text.startswith("@") and len(text) > 1 and " " not in text:
        name = text[1:]
        return CatchupQuery(author=name, topic=name, label=f"from {code_span(name)}")
    if text:
        return CatchupQuery(since=asker_last, topic=text, label=f"about {code_span(text)}")
    return CatchupQuery(since=asker_last)


class TranscriptSource:
    """The chat's stored messages (every session, archived included), deleted ones excluded."""

    def __init__(self, store: TranscriptReads) -> None:
        self._store = store

    async def turns(self, chat_key: str, query: CatchupQuery) -> list[dict[str, Any]]:
        rows = [r for r in await self._store.load_history(chat_key) if _readable(r)]
        rows = _distinct(rows)
        if query.author is not None:
            wanted = query.author.casefold()
            rows = [r for r in rows if (r.author_name or "").casefold() == wanted]
        if query.since is not None:
            rows = [r for r in rows if r.created_at > query.since]
        else:
            rows = rows[-DEFAULT_SPAN_MESSAGES:]
        return [r.to_openai() for r in rows[-MAX_SPAN_MESSAGES:]]


class MemorySource:
    """The current memory entries of the chat's open sessions that fall in the span."""

    def __init__(self, sessions: SessionStore, transcript: TranscriptReads) -> None:
        self._sessions = sessions
        self._transcript = transcript

    async def turns(self, chat_key: str, query: CatchupQuery) -> list[dict[str, Any]]:
        since = (
            dt.datetime.fromtimestamp(query.since, dt.UTC).date().isoformat()
            if query.since is not None
            else None
        )
        found: list[MemoryEntry] = []
        for session in await self._sessions.list_sessions(chat_key):
            if session.ended_at is None:
                memory = await self._transcript.load_memory(session.id)
                found += [e for e in memory.current() if _in_span(e, query, since)]
        # The kind as a label: the digest types a remembered line by it, as it types the chat.
        return [
            {"role": "user", "content": f"[{e.speaker or 'memory'}] Remembered {e.kind}: {e.text}"}
            for e in found
        ]


def _in_span(entry: MemoryEntry, query: CatchupQuery, since: str | None) -> bool:
    # The bot's own words are not what the chat said (SPEC 6.6), whatever an older memory holds.
    if entry.kind not in MEMORY_KINDS or entry.speaker == "assistant":
        return False
    if since is not None and (entry.date or "") < since:
        return False
    if query.author is not None and (entry.speaker or "").casefold() != query.author.casefold():
        return False
    return (
        query.topic is None
        or query.author is not None
        or (query.topic.casefold() in f"{entry.subject or ''} {entry.text}".casefold())
    )


async def catchup(
    services: Services,
    *,
    chat_key: str,
    asker_id: str,
    args: str,
    language: str | None,
    sources: Sequence[CatchupSource] | None = None,
) -> str:
    """The digest text for the asker, or why there is none; changes nothing in the transcript."""
    gate = NoticeGate(
        services.shared_limits, "summary", SUMMARY_INTERVAL_SECONDS, clock=services.clock
    )
    if not await gate.first((chat_key, asker_id)):
        return "⏳ One /summary a minute, please; try again shortly."
    now = services.clock()
    asker_last = await _last_message_of(services.transcript, chat_key, asker_id)
    query = parse_query(args, now=now, asker_last=asker_last)
    turns: list[dict[str, Any]] = []
    for source in sources or (MemorySource(services.sessions, services.transcript),):
        turns.extend(await source.turns(chat_key, query))
    messages = await TranscriptSource(services.transcript).turns(chat_key, query)
    if not messages:
        return f"Nothing to catch up on {query.label}."
    turns.extend(messages)
    request = SummaryRequest(
        # The newest part when the span is larger than one call: a digest leads with what is new.
        turns=chunk_turns(summary_turns(turns), SUMMARY_INPUT_MAX_CHARS)[-1],
        previous_summary=None,
        focus_topic=query.topic,
        budget_tokens=SUMMARY_BUDGET_TOKENS,
        today=dt.datetime.fromtimestamp(now, dt.UTC).date(),
        participants=participants(turns),
        language=language,
    )
    # Charged to the asker; past a budget the digest is written without the model (SPEC 17).
    with spending_for(chat_key, asker_id, "reply"):
        body = await _summarize(services.summarizer(_ignore_usage), request)
    return f"🧾 What you missed {query.label} ({len(messages)} messages):\n\n{body}"


def _ignore_usage(_model: str, _prompt: int, _completion: int) -> None:
    """The metered summarizer records each call itself."""


async def _summarize(summarizer: Summarizer | None, request: SummaryRequest) -> str:
    if summarizer is not None:
        try:
            text = await summarizer.summarize(request)
            return summary_body(text) if is_summary_text(text) else text.strip()
        except SummaryError as exc:
            log.warning("catchup: summary model failed (%s); using the built-in summary", exc)
    return deterministic_summary(request, unavailable=summarizer is not None)


async def _last_message_of(store: TranscriptReads, chat_key: str, author_id: str) -> float | None:
    rows = await store.load_history(chat_key)
    mine = [r.created_at for r in rows if r.author_id == author_id and r.role == "user"]
    return mine[-1] if mine else None


def _readable(row: StoredMessage) -> bool:
    return (
        row.kind == "message"
        and row.role in ("user", "assistant")
        and isinstance(row.content, str | list)
        and bool(row.text.strip())
    )


def _distinct(rows: list[StoredMessage]) -> list[StoredMessage]:
    """A compaction copies its tail verbatim: each message once, in order."""
    seen: set[tuple[str | None, str, str]] = set()
    out: list[StoredMessage] = []
    for row in rows:
        key = (row.platform_message_id, row.role, row.text)
        if key not in seen:
            seen.add(key)
            out.append(row)
    return out

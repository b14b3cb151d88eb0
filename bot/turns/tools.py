"""The agent's tools (search_history, recall, remember, chat_stats): schemas and execution."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from compactbot.bot.llm.client import ToolCall
from compactbot.bot.store.base import SearchHit, StoredMessage, StoreError
from compactbot.bot.store.protocols.event_store import CompressionEventStore
from compactbot.bot.store.protocols.pin_store import PinStore
from compactbot.bot.store.protocols.session_store import SessionStore
from compactbot.bot.store.protocols.transcript_store import TranscriptReads
from compactbot.bot.turns.recall import (
    DEFAULT_RECALL_LIMIT,
    MAX_RECALL_LIMIT,
    recall,
    recall_pins,
    valid_kind,
)
from compactbot.bot.turns.search_words import query_stems, search_terms
from compactbot.compression.memory import ENTRY_KINDS
from compactbot.compression.template import is_summary_text
from compactbot.compression.transcript import split_speaker

log = logging.getLogger(__name__)

SEARCH_HISTORY = "search_history"
RECALL = "recall"
REMEMBER = "remember"
CHAT_STATS = "chat_stats"
# More, shorter snippets: an answer is one sentence of one message more often than a whole one.
DEFAULT_SEARCH_LIMIT = 8
MAX_SEARCH_LIMIT = 20
# Each term's FTS query fetches this many times the limit, so merging still has enough to rank.
SEARCH_OVERFETCH = 3
MAX_HIT_CHARS = 240
MAX_FACT_CHARS = 500
# A message holding this share of a fact's words is where the fact came from.
AUTHORED_SHARE = 0.6
# Counting every compaction event the store keeps for a chat; far above any real chat's count.
MAX_EVENTS_COUNTED = 100_000
COMPACTION_OUTCOMES = frozenset({"compressed", "fallback"})


class ToolArgumentError(ValueError):
    """The model called a tool with arguments that do not fit its schema."""


class ToolStore(SessionStore, TranscriptReads, PinStore, CompressionEventStore, Protocol):
    """What the tools read (the transcript, memory, pins, compaction events) and write (a pin)."""


@dataclass(frozen=True, slots=True)
class ToolContext:
    store: ToolStore
    chat_key: str
    session_id: int
    author_id: str | None
    author_name: str | None
    can_remember: bool
    # The message that triggered this turn: the question itself is not an answer to it.
    current_message_id: int | None = None


def _function(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> dict[str, Any]:
    parameters = {"type": "object", "properties": properties, "required": required}
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }


TOOL_SCHEMAS: list[dict[str, Any]] = [
    _function(
        SEARCH_HISTORY,
        "Search everything ever said in this chat, including compacted (archived) history. "
        "Use a few keywords: names, topics, exact values.",
        {
            "query": {"type": "string", "description": "Keywords to look for."},
            "limit": {
                "type": "integer",
                "description": "How many messages to return.",
                "minimum": 1,
                "maximum": MAX_SEARCH_LIMIT,
                "default": DEFAULT_SEARCH_LIMIT,
            },
        },
        ["query"],
    ),
    _function(
        RECALL,
        "Look up what this chat's memory holds (rules, decisions, facts, action items, …), "
        "including entries the summary had no room for and values that were replaced. "
        "Use a few keywords; optionally one kind.",
        {
            "query": {"type": "string", "description": "Keywords; every one must match."},
            "kind": {"type": "string", "enum": list(ENTRY_KINDS), "description": "Entry kind."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RECALL_LIMIT,
                "default": DEFAULT_RECALL_LIMIT,
            },
        },
        ["query"],
    ),
    _function(
        REMEMBER,
        "Pin a rule or exact value this chat asked you to keep; pins survive every compaction.",
        {"fact": {"type": "string", "description": "The fact, verbatim and self-contained."}},
        ["fact"],
    ),
    _function(CHAT_STATS, "Report this chat's size, compactions and pins.", {}, []),
]


async def run_tool(call: ToolCall, ctx: ToolContext) -> str:
    """Execute one tool call; the result is always a JSON string, errors included."""
    handler = _HANDLERS.get(call.name)
    if handler is None:
        return _dump({"error": f"unknown tool: {call.name}"})
    try:
        args = _parse_arguments(call.arguments)
        result = await handler(args, ctx)
    except ToolArgumentError as exc:
        result = {"error": str(exc)}
    except StoreError as exc:
        log.warning(
            "tool failed: chat=%s session=%s tool=%s error=%s",
            ctx.chat_key,
            ctx.session_id,
            call.name,
            type(exc).__name__,
        )
        result = {"error": "the chat history is unavailable right now"}
    log.info(
        "tool ran: chat=%s session=%s tool=%s ok=%s",
        ctx.chat_key,
        ctx.session_id,
        call.name,
        "error" not in result,
    )
    return _dump(result)


def _dump(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def _parse_arguments(raw: str) -> dict[str, Any]:
    if not raw or not raw.strip():
        return {}
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ToolArgumentError(f"arguments are not valid JSON: {exc.msg}") from exc
    if not isinstance(args, dict):
        raise ToolArgumentError("arguments must be a JSON object")
    return args


async def _search_history(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolArgumentError("query must be a non-empty string")
    limit = _limit(args.get("limit", DEFAULT_SEARCH_LIMIT))
    terms = query_stems(query)
    if not terms:
        return {"query": query, "hits": [], "count": 0}
    # The whole query as a phrase ranks exact quotes above scattered words.
    searches = [*terms, " ".join(terms)] if len(terms) > 1 else terms
    # Keyed by text as well as id: a compaction copies its tail, so one message can exist twice.
    scores: dict[tuple[int, str, str], int] = {}
    hits: dict[tuple[int, str, str], SearchHit] = {}
    for term in searches:
        seen: set[tuple[int, str, str]] = set()
        for hit in await ctx.store.search(ctx.chat_key, term, limit * SEARCH_OVERFETCH):
            key = (hit.session_id, hit.role, hit.text)
            if not _is_quotable(hit, ctx) or key in seen:
                continue
            seen.add(key)
            if key not in hits or hit.message_id > hits[key].message_id:
                hits[key] = hit
            scores[key] = scores.get(key, 0) + 1
    # A question repeats the words of its answer; the statement that answers it ranks first.
    ranked = sorted(
        hits.items(),
        key=lambda item: (
            scores[item[0]],
            not _is_question(item[1].text),
            item[1].created_at,
            item[1].message_id,
        ),
        reverse=True,
    )
    found = [_hit_json(hit, terms) for _, hit in ranked[:limit]]
    return {"query": query, "hits": found, "count": len(found)}


def _limit(value: Any) -> int:
    # Models sometimes send "5" or 5.0; both mean 5.
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ToolArgumentError("limit must be an integer")
    return max(1, min(int(value), MAX_SEARCH_LIMIT))


def _is_quotable(hit: SearchHit, ctx: ToolContext) -> bool:
    if hit.message_id == ctx.current_message_id:
        return False
    if hit.role not in ("user", "assistant"):
        return False
    # The bot's tool-call messages say nothing; a summary restates the history in the
    # compressor's words. Quote the people instead.
    return bool(_plain_text(hit.text).strip()) and not is_summary_text(hit.text)


def _is_question(text: str) -> bool:
    return text.rstrip().endswith(("?", "？"))


def _hit_json(hit: SearchHit, terms: list[str]) -> dict[str, Any]:
    prefix_name, body = split_speaker(_plain_text(hit.text))
    speaker = "bot" if hit.role == "assistant" else hit.author_name or prefix_name or "someone"
    body = _snippet(" ".join(body.split()), terms)
    date = datetime.fromtimestamp(hit.created_at, UTC).strftime("%Y-%m-%d")
    return {"speaker": speaker, "date": date, "text": body, "archived": not hit.active}


def _snippet(text: str, terms: list[str]) -> str:
    """At most MAX_HIT_CHARS of `text`, around the first place a search term occurs."""
    if len(text) <= MAX_HIT_CHARS:
        return text
    lowered = text.lower()
    found = [at for at in (lowered.find(t.lower()) for t in terms) if at >= 0]
    start = max(0, min(found, default=0) - MAX_HIT_CHARS // 4)
    end = min(len(text), start + MAX_HIT_CHARS - 2)
    start = max(0, end - (MAX_HIT_CHARS - 2))
    return ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")


def _plain_text(text: str) -> str:
    # The store renders list content (text parts, images) as JSON; quote only its text parts.
    if not text.startswith("[{"):
        return text
    try:
        parts = json.loads(text)
    except json.JSONDecodeError:
        return text
    if not isinstance(parts, list):
        return text
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return " ".join(texts) if texts else text


async def _recall(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    query = args.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolArgumentError("query must be a non-empty string")
    kind = args.get("kind")
    if kind is not None and valid_kind(kind) is None:
        raise ToolArgumentError(f"kind must be one of: {', '.join(ENTRY_KINDS)}")
    limit = min(_limit(args.get("limit", DEFAULT_RECALL_LIMIT)), MAX_RECALL_LIMIT)
    memory = await ctx.store.load_memory(ctx.session_id)
    terms = query_stems(query)
    entries = recall(memory, terms, kind=valid_kind(kind), limit=limit)
    found: dict[str, Any] = {"query": query, "entries": entries, "count": len(entries)}
    if kind in (None, "rule"):
        # Pins are the chat's rules: a recall of rules finds them beside the memory's.
        pins = recall_pins([p.text for p in await ctx.store.list_pins(ctx.chat_key)], terms)
        found["pins"] = pins[:limit]
    return found


async def _remember(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    if not ctx.can_remember:
        return {"error": "only chat admins can pin facts here"}
    fact = args.get("fact")
    if not isinstance(fact, str) or not fact.strip():
        raise ToolArgumentError("fact must be a non-empty string")
    fact = fact.strip()
    if len(fact) > MAX_FACT_CHARS:
        raise ToolArgumentError(f"fact is longer than {MAX_FACT_CHARS} characters")
    written_by = _other_author(fact, await ctx.store.load_active(ctx.session_id), ctx.author_id)
    if written_by is not None:
        return {
            "error": f"{written_by} wrote this, not the admin asking; only an admin's own words "
            "are pinned — an admin can pin it with /pin"
        }
    pin = await ctx.store.add_pin(ctx.chat_key, fact, ctx.author_name or ctx.author_id)
    return {"pinned": pin.id, "text": pin.text}


def _other_author(fact: str, rows: list[StoredMessage], asker_id: str | None) -> str | None:
    """Who else wrote most of `fact`, if a member other than the asker did (SPEC 16).

    A member's planted instruction must not become an admin's pin because an admin talked to
    the bot: the author of the text decides, not who asked.
    """
    words = {term.lower() for term in search_terms(fact)}
    if not words:
        return None
    best_share, best_row = 0.0, None
    for row in rows:
        if row.role != "user" or not row.text:
            continue
        share = len(words & {t.lower() for t in search_terms(row.text)}) / len(words)
        # A tie goes to the asker: restating a rule is how an admin adopts it.
        if share > best_share or (share == best_share and row.author_id == asker_id):
            best_share, best_row = share, row
    if best_row is None or best_share < AUTHORED_SHARE or best_row.author_id == asker_id:
        return None
    return best_row.author_name or "another member"


async def _chat_stats(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    session = await ctx.store.get_session(ctx.session_id)
    events = await ctx.store.list_compression_events(
        chat_key=ctx.chat_key, limit=MAX_EVENTS_COUNTED
    )
    pins = await ctx.store.list_pins(ctx.chat_key)
    return {
        "active_messages": session.active_messages,
        "active_tokens": session.active_tokens,
        "compactions": sum(1 for e in events if e.outcome in COMPACTION_OUTCOMES),
        "pins": len(pins),
        "archived_messages": await ctx.store.count_archived(ctx.chat_key),
    }


_Handler = Callable[[dict[str, Any], ToolContext], Awaitable[dict[str, Any]]]
_HANDLERS: dict[str, _Handler] = {
    SEARCH_HISTORY: _search_history,
    RECALL: _recall,
    REMEMBER: _remember,
    CHAT_STATS: _chat_stats,
}

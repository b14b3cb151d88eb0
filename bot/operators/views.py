"""Read-only operator views: `chats --top tokens|compactions|failures` and `events CHAT`.

Only the store's read methods are called, so these never change the database.
"""

from __future__ import annotations

import argparse
import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Protocol

from compactbot.bot.compaction.report import CHANGED_OUTCOMES
from compactbot.bot.store.base import CompressionEvent
from compactbot.bot.store.protocols.chat_store import ChatStore
from compactbot.bot.store.protocols.event_store import CompressionEventStore
from compactbot.bot.store.protocols.session_store import SessionStore
from compactbot.bot.store.protocols.usage_store import UsageStore

# A compaction that did not leave a model-written summary: it failed, or fell back to the
# deterministic summary because the summary model failed.
FAILED_OUTCOMES = frozenset({"aborted", "error", "fallback"})
# Every recorded event is read to rank chats; a bound keeps a runaway table from exhausting memory.
EVENTS_SCAN_LIMIT = 1_000_000


class ViewedStore(ChatStore, SessionStore, CompressionEventStore, UsageStore, Protocol):
    """What the views read: chats, their sessions' sizes, compaction events and usage."""


class ViewError(Exception):
    """A one-line problem with the request (unknown chat, bad number)."""


@dataclass(frozen=True, slots=True)
class ChatRank:
    key: str
    platform: str
    active_tokens: int
    used_tokens: int
    compactions: int
    failures: int
    last_failure: str | None


async def top_chats(
    store: ViewedStore, by: str, *, days: int, limit: int, today: dt.date
) -> list[str]:
    """Lines for the `limit` chats with the most tokens used, compactions or failures."""
    if days < 1 or limit < 1:
        raise ViewError("--days and --limit must be at least 1")
    since = (today - dt.timedelta(days=days - 1)).isoformat()
    chats = await store.list_chats()
    active: Counter[str] = Counter()
    for session in await store.list_sessions():
        active[session.chat_key] += session.active_tokens
    by_chat: defaultdict[str, list[CompressionEvent]] = defaultdict(list)
    for event in await store.list_compression_events(limit=EVENTS_SCAN_LIMIT):
        by_chat[event.chat_key].append(event)
    ranks = []
    for chat in chats:
        used = sum(
            row.prompt_tokens + row.completion_tokens
            for row in await store.usage(chat.key, since)
            if row.day >= since
        )
        events = by_chat.get(chat.key, [])
        failed = [e for e in events if e.outcome in FAILED_OUTCOMES]  # newest first
        ranks.append(
            ChatRank(
                key=chat.key,
                platform=chat.platform,
                active_tokens=active[chat.key],
                used_tokens=used,
                compactions=sum(e.outcome in CHANGED_OUTCOMES for e in events),
                failures=len(failed),
                last_failure=(failed[0].error or failed[0].outcome) if failed else None,
            )
        )
    sort_key = {
        "tokens": lambda r: r.used_tokens,
        "compactions": lambda r: r.compactions,
        "failures": lambda r: r.failures,
    }[by]
    ranks.sort(key=lambda r: (-sort_key(r), r.key))
    return [_rank_line(r, days) for r in ranks[:limit]]


def _rank_line(rank: ChatRank, days: int) -> str:
    line = (
        f"{rank.key}  {rank.platform}  {rank.used_tokens:,} tokens used in {days} d  "
        f"{rank.active_tokens:,} active  {rank.compactions} compactions  {rank.failures} failures"
    )
    return line + (f" (last: {rank.last_failure})" if rank.last_failure else "")


async def chat_events(store: ViewedStore, chat: str, *, limit: int) -> list[str]:
    """The chat's newest `limit` compactions, oldest first: before → after, duration, outcome."""
    if limit < 1:
        raise ViewError("--limit must be at least 1")
    if await store.get_chat(chat) is None:
        raise ViewError(f"unknown chat {chat!r} (see `compactbot chats`)")
    events = await store.list_compression_events(chat_key=chat, limit=limit)
    if not events:
        return [f"no compactions recorded for {chat}"]
    return [event_line(e) for e in reversed(events)]


def event_line(event: CompressionEvent) -> str:
    when = dt.datetime.fromtimestamp(event.started_at, dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    seconds = max(event.ended_at - event.started_at, 0.0)
    line = (
        f"{when}  s{event.session_id}  {event.trigger:<13} {event.outcome:<10} "
        f"{event.messages_before} → {event.messages_after} msgs  "
        f"{event.tokens_before:,} → {event.tokens_after:,} tokens  "
        f"summary {event.summary_tokens:,}  {seconds:.1f}s"
    )
    return line + (f"  error: {event.error}" if event.error else "")


async def show(store: ViewedStore, command: str, args: argparse.Namespace) -> list[str]:
    """The lines of `chats --top` or `events` (the operator CLI prints them)."""
    if command == "events":
        return await chat_events(store, args.chat, limit=args.limit)
    today = dt.datetime.now(dt.UTC).date()
    return await top_chats(store, args.top, days=args.days, limit=args.limit, today=today)

"""Chats for the console's tests, screenshots and benchmark, written through the store's API.

A compaction is committed the way the service commits one (`archive_and_compact` with its summary
row, memory and event), so the console reads exactly what a running bot leaves behind.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, replace

from compactbot.bot.store.backends import Store
from compactbot.bot.store.base import CompressionEvent, NewMessage
from compactbot.compression import SUMMARY_END_MARKER, SUMMARY_PREFIX
from compactbot.compression.memory import ENTRY_KINDS, Memory, MemoryEntry
from compactbot.compression.state import CompressorState

APPEND_BATCH = 1000
MESSAGE_SPACING_SECONDS = 30
LIVE_TAIL = 12
# Members' messages carry platform ids as the adapters store them: a purge names one by its id.
FIRST_PLATFORM_ID = 5001
# What the seeded compaction's summary cost: two calls (a long span), 5,432 tokens.
SEED_SUMMARY_CALLS, SEED_SUMMARY_COST = 2, 5_432

# A short real-looking conversation: the source of the named memory entries below.
TALK = (
    ("alice", "Alice", "Morning all. Reminder: we never deploy on Fridays."),
    ("bob", "Bob", "Agreed. The budget cap for the cloud bill is 500 EUR a month."),
    ("chen", "陈明", "我更喜欢用 PostgreSQL 做主数据库。"),
    (
        "alice",
        "Alice",
        "Let's go with PostgreSQL 16 then. Bob, can you migrate staging by 2026-12-04?",
    ),
    ("bob", "Bob", "Will do. The runbook is at https://wiki.example.org/runbooks/db-migration"),
    ("chen", "陈明", "测试环境的地址是 10.0.4.17，端口 5432。"),
)
NAMED_ENTRIES = (
    ("rule", "Never deploy on Fridays.", None, 0),
    ("fact", "500 EUR a month", "cloud budget cap", 1),
    ("preference", "陈明 prefers PostgreSQL as the primary database.", None, 2),
    ("decision", "Use PostgreSQL 16 as the primary database.", "primary database", 3),
    ("action", "Bob migrates staging to PostgreSQL 16.", None, 3),
    ("link", "DB migration runbook: https://wiki.example.org/runbooks/db-migration", None, 4),
    ("fact", "10.0.4.17:5432", "staging database address", 5),
)


@dataclass(frozen=True, slots=True)
class SeededChat:
    key: str
    session_id: int
    archived_ids: list[int]
    memory: Memory


def _summary_text(memory: Memory) -> str:
    lines = [f"- {e.kind}: {e.text}" for e in memory.current()[:20]]
    return "\n".join(
        [
            SUMMARY_PREFIX,
            "Earlier in this conversation (reference only).",
            "## Chat rules and constraints",
            *lines,
            SUMMARY_END_MARKER,
        ]
    )


def _one_more_compaction(state: CompressorState) -> CompressorState:
    return replace(state, compression_count=state.compression_count + 1)


async def seed_chat(
    store: Store,
    key: str,
    *,
    title: str,
    platform: str,
    start: float,
    filler_messages: int = 40,
    extra_entries: int = 0,
    usage_days: int = 14,
) -> SeededChat:
    """A chat with the talk above and `filler_messages` more, compacted once at `start` (all but
    a live tail archived), memory with the named entries plus `extra_entries`, pins, events and
    `usage_days` of usage."""
    await store.upsert_chat(key, platform, title=title)
    first = start - (len(TALK) + filler_messages) * MESSAGE_SPACING_SECONDS
    session = await store.active_session(key)
    rows = [
        NewMessage(
            "user",
            f"[{name}] {text}",
            12,
            author_id=uid,
            author_name=name,
            platform_message_id=str(FIRST_PLATFORM_ID + i),
            created_at=first + i * MESSAGE_SPACING_SECONDS,
        )
        for i, (uid, name, text) in enumerate(TALK)
    ]
    speakers = (("alice", "Alice"), ("bob", "Bob"), ("chen", "陈明"), ("dana", "Dana"))
    for i in range(filler_messages):
        uid, name = speakers[i % len(speakers)]
        rows.append(
            NewMessage(
                "user",
                f"[{name}] note {i}: the build of branch feature-{i % 97} is green",
                14,
                author_id=uid,
                author_name=name,
                platform_message_id=str(FIRST_PLATFORM_ID + len(TALK) + i),
                created_at=first + (len(TALK) + i) * MESSAGE_SPACING_SECONDS,
            )
        )
    ids: list[int] = []
    for at in range(0, len(rows), APPEND_BATCH):
        ids += await store.append_messages(session.id, rows[at : at + APPEND_BATCH])
    day = dt.datetime.fromtimestamp(start, dt.UTC).date().isoformat()
    entries = [
        MemoryEntry(
            n + 1,
            kind,
            text,
            subject=subject,
            speaker=TALK[src][1],
            date=day,  # type: ignore[arg-type]
            sources=(str(ids[src]),),
        )
        for n, (kind, text, subject, src) in enumerate(NAMED_ENTRIES)
    ]
    for n in range(extra_entries):
        src = len(TALK) + n % max(filler_messages, 1)
        entries.append(
            MemoryEntry(
                len(entries) + 1,
                ENTRY_KINDS[n % len(ENTRY_KINDS)],
                f"Remembered item {n} about feature-{n % 97}",
                speaker="Dana",
                date=day,
                sources=(str(ids[min(src, len(ids) - 1)]),),
            )
        )
    memory = Memory(tuple(entries))
    archived = ids[: len(ids) - LIVE_TAIL]
    summary = NewMessage("user", _summary_text(memory), 180, kind="summary", created_at=start)
    before = sum(r.tokens for r in rows)
    event = CompressionEvent(
        key,
        session.id,
        "hygiene",
        start - 4.2,
        start,
        "compressed",
        len(rows),
        LIVE_TAIL + 1,
        before,
        180 + 14 * LIVE_TAIL,
        180,
        summary_calls=SEED_SUMMARY_CALLS,
        summary_cost_tokens=SEED_SUMMARY_COST,
    )
    commit = await store.archive_and_compact(
        session, [summary], archived[-1], memory=memory, event=event, state=_one_more_compaction
    )
    assert commit is not None, "the seed compaction lost its commit"
    await store.record_compression_event(
        CompressionEvent(
            key,
            session.id,
            "overnight",
            start - 86_400,
            start - 86_398,
            "noop",
            20,
            20,
            900,
            900,
            0,
            "nothing to summarise",
        )
    )
    await store.add_pin(key, "The on-call phone is +49 30 1234567.", "Alice")
    today = dt.datetime.fromtimestamp(start, dt.UTC).date()
    for back in range(usage_days):
        when = (today - dt.timedelta(days=back)).isoformat()
        await store.add_usage(key, "alice", "reply", 1200 + 90 * back, 300, day=when)
        if back % 3 == 0:
            await store.add_usage(key, None, "compression", 4000 + 10 * back, 600, day=when)
    return SeededChat(key, session.id, archived, memory)

"""`/summary` reads the chat's memory as well as its transcript (SPEC 11, 6.11)."""

from __future__ import annotations

import datetime as dt

from compactbot.bot.commands.catchup import CatchupQuery, MemorySource
from compactbot.bot.store.backends import Store
from compactbot.compression.memory import Memory, MemoryEntry
from tests.store.factories import summary, user

CHAT = "console:room"


def _day(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC).timestamp()


async def _remember(store: Store, *entries: MemoryEntry) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(session.id, [user("m1"), user("m2")])
    commit = await store.archive_and_compact(
        session, [summary("S")], ids[-1], memory=Memory(entries)
    )
    assert commit is not None


async def test_the_memory_brings_decisions_and_open_actions_of_the_span(store: Store) -> None:
    await _remember(
        store,
        MemoryEntry(1, "rule", "Never paste keys here.", speaker="Ann", date="2026-11-01"),
        MemoryEntry(2, "decision", "We use Postgres for billing.", speaker="Bo", date="2026-11-30"),
        MemoryEntry(3, "action", "Cy writes the migration plan.", speaker="Cy", date="2026-11-30"),
        MemoryEntry(4, "preference", "Bo likes tea.", speaker="Bo", date="2026-11-30"),
    )
    turns = await MemorySource(store, store).turns(CHAT, CatchupQuery(since=_day("2026-11-29")))
    assert [t["content"] for t in turns] == [
        "[Bo] Remembered decision: We use Postgres for billing.",
        "[Cy] Remembered action: Cy writes the migration plan.",
    ]


async def test_the_memory_follows_the_asked_member_and_topic(store: Store) -> None:
    await _remember(
        store,
        MemoryEntry(1, "decision", "Billing moves to Postgres.", speaker="Bo", date="2026-11-30"),
        MemoryEntry(2, "fact", "The launch codename is PELICAN.", speaker="Ann", date="2026-11-30"),
    )
    source = MemorySource(store, store)
    by_ann = await source.turns(CHAT, CatchupQuery(author="ann", topic="ann"))
    about_billing = await source.turns(CHAT, CatchupQuery(topic="billing"))
    assert [t["content"] for t in by_ann] == [
        "[Ann] Remembered fact: The launch codename is PELICAN."
    ]
    assert [t["content"] for t in about_billing] == [
        "[Bo] Remembered decision: Billing moves to Postgres."
    ]

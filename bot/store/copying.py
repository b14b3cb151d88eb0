"""Copying a whole store to an empty one (SQLite ⇄ PostgreSQL), then checking the copy."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from compactbot.bot.store.base import StoreError
from compactbot.bot.store.protocols.session_store import SessionStore
from compactbot.bot.store.tables import COPIED_TABLES, CopiedTable, Row, StoreTables


class CopyRefused(StoreError):
    """The destination already holds data: a copy would mix two stores' ids."""


class CopyableStore(SessionStore, Protocol):
    """Raw tables to copy, and the sessions whose totals the copy is checked against."""

    def tables(self) -> StoreTables: ...


@dataclass(frozen=True, slots=True)
class TableCount:
    table: str
    source: int
    destination: int


@dataclass(frozen=True, slots=True)
class CopyReport:
    counts: tuple[TableCount, ...]
    mismatches: tuple[str, ...]  # one line each; empty when the copy is exact

    @property
    def ok(self) -> bool:
        return not self.mismatches


async def copy_store(source: CopyableStore, destination: CopyableStore) -> CopyReport:
    """Copy every table in one destination transaction, then verify counts and running totals."""
    target = destination.tables()
    for table in COPIED_TABLES:
        if await target.count(table):
            raise CopyRefused(f"the destination is not empty ({table.name} has rows)")
    origin = source.tables()

    async def batches() -> AsyncIterator[tuple[CopiedTable, list[Row]]]:
        for table in COPIED_TABLES:
            async for page in origin.pages(table):
                yield table, page

    await target.load(batches())
    return await verify_copy(source, destination)


async def verify_copy(source: CopyableStore, destination: CopyableStore) -> CopyReport:
    """Row counts per table, and each session's totals, state and recount, on both sides."""
    counts: list[TableCount] = []
    mismatches: list[str] = []
    origin, target = source.tables(), destination.tables()
    for table in COPIED_TABLES:
        count = TableCount(table.name, await origin.count(table), await target.count(table))
        counts.append(count)
        if count.source != count.destination:
            mismatches.append(
                f"{table.name}: {count.source} rows in the source, {count.destination} copied"
            )
    copied = {s.id: s for s in await destination.list_sessions()}
    for session in await source.list_sessions():
        twin = copied.get(session.id)
        if twin is None:
            mismatches.append(f"session {session.id}: missing from the destination")
            continue
        if twin != session:
            mismatches.append(f"session {session.id}: totals, version or state differ")
        recount = await destination.recount(session.id)
        if recount != (twin.active_tokens, twin.active_messages):
            mismatches.append(
                f"session {session.id}: running totals {twin.active_tokens} tokens,"
                f" {twin.active_messages} messages; recount {recount[0]}, {recount[1]}"
            )
    return CopyReport(tuple(counts), tuple(mismatches))

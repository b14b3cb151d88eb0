"""Whole tables of a store as plain rows, for moving a store between backends.

Each backend reads pages of a table in key order and loads batches of rows in one transaction,
keeping ids, `seq` and flags as they are; a column only one backend has is left out (or, for the
PostgreSQL search text, derived again).
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any, Protocol

PAGE_ROWS = 2000

Row = dict[str, Any]


@dataclass(frozen=True, slots=True)
class CopiedTable:
    name: str
    key: tuple[str, ...]  # the primary key: page order, and what makes a row unique
    # Rows whose order of insertion is meaningful (SQLite's rowid, PostgreSQL's `position`) are
    # paged in that order, so the destination inserts them, and numbers them, in it too.
    in_insertion_order: bool = False


# In foreign-key order. Compression locks are not copied (a lease never outlives its process),
# nor the shared limits (rate and notice windows, admin cache): they expire within minutes.
COPIED_TABLES: tuple[CopiedTable, ...] = (
    CopiedTable("chats", ("key",)),
    CopiedTable("sessions", ("id",)),
    CopiedTable("messages", ("id",)),
    CopiedTable("chat_settings", ("chat_key", "key")),
    CopiedTable("compression_events", ("id",)),
    CopiedTable("usage", ("chat_key", "user_id", "day", "purpose")),
    CopiedTable("processed_updates", ("platform", "update_id")),
    CopiedTable("pins", ("id",)),
    CopiedTable("dead_letters", ("id",)),
    CopiedTable("memory_entries", ("session_id", "entry_id")),
    CopiedTable("memory_reread", ("session_id", "message_id"), in_insertion_order=True),
    CopiedTable("message_revisions", ("id",)),
    # Console sessions and sign-in links expire within hours; what was changed stays on record.
    CopiedTable("console_audit", ("id",)),
)


class StoreTables(Protocol):
    """Raw access to one store's tables; values are Python ints, floats, strs, bools or None."""

    def pages(self, table: CopiedTable) -> AsyncIterator[list[Row]]: ...
    async def count(self, table: CopiedTable) -> int: ...
    async def load(self, batches: AsyncIterable[tuple[CopiedTable, list[Row]]]) -> None:
        """Insert every batch in one transaction: all rows or, on any error, none."""
        ...


def quoted(identifier: str) -> str:
    """A table or column name from our own schema, quoted for SQL (never user input)."""
    return '"' + identifier.replace('"', '""') + '"'

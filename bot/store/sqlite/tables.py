"""`StoreTables` on SQLite: pages of rows in key order, batches loaded in one transaction."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

from compactbot.bot.store.sqlite.database import Database
from compactbot.bot.store.tables import PAGE_ROWS, CopiedTable, Row, quoted


class SqliteTables:
    def __init__(self, db: Database) -> None:
        self._db = db

    async def pages(self, table: CopiedTable) -> AsyncIterator[list[Row]]:
        first = ("rowid",) * table.in_insertion_order
        order = ", ".join(first + tuple(quoted(c) for c in table.key))
        offset = 0
        while True:
            found = await self._db.fetchall(
                f"SELECT * FROM {quoted(table.name)} ORDER BY {order} LIMIT ? OFFSET ?",
                (PAGE_ROWS, offset),
            )
            if not found:
                return
            yield [dict(r) for r in found]
            offset += len(found)

    async def count(self, table: CopiedTable) -> int:
        row = await self._db.fetchone(f"SELECT count(*) FROM {quoted(table.name)}")
        return int(row[0])

    async def load(self, batches: AsyncIterable[tuple[CopiedTable, list[Row]]]) -> None:
        async with self._db.transaction() as conn:
            known: dict[str, list[str]] = {}
            async for table, batch in batches:
                if table.name not in known:
                    info = await conn.execute_fetchall(f"PRAGMA table_info({quoted(table.name)})")
                    known[table.name] = [r["name"] for r in info]
                columns = [c for c in known[table.name] if c in batch[0]]
                marks = ", ".join("?" for _ in columns)
                names = ", ".join(quoted(c) for c in columns)
                # Explicit ids also advance AUTOINCREMENT's counter, so later rows follow them.
                await conn.executemany(
                    f"INSERT INTO {quoted(table.name)} ({names}) VALUES ({marks})",
                    [tuple(r[c] for c in columns) for r in batch],
                )

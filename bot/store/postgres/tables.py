"""`StoreTables` on PostgreSQL: pages in key order, batches loaded in one transaction."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any

from compactbot.bot.store import rows
from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.postgres.rows import search_text_of
from compactbot.bot.store.tables import PAGE_ROWS, CopiedTable, Row, quoted

# Rows from SQLite carry 0/1 for booleans and may carry ints for floats; asyncpg wants the type.
_CONVERTERS: dict[str, Callable[[Any], Any]] = {
    "boolean": bool,
    "double precision": float,
    "bigint": int,
    "integer": int,
}


class PostgresTables:
    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def pages(self, table: CopiedTable) -> AsyncIterator[list[Row]]:
        first = ("position",) * table.in_insertion_order
        order = ", ".join(first + tuple(quoted(c) for c in table.key))
        offset = 0
        while True:
            found = await self._db.fetchall(
                f"SELECT * FROM {quoted(table.name)} ORDER BY {order} LIMIT $1 OFFSET $2",
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
            types: dict[str, dict[str, str]] = {}
            async for table, batch in batches:
                if table.name not in types:
                    found = await conn.fetch(
                        "SELECT column_name, data_type FROM information_schema.columns"
                        " WHERE table_schema = current_schema() AND table_name = $1"
                        " ORDER BY ordinal_position",
                        table.name,
                    )
                    types[table.name] = {r["column_name"]: r["data_type"] for r in found}
                column_types = types[table.name]
                if table.name == "messages":
                    batch = [_with_search_text(r) for r in batch]
                columns = [c for c in column_types if c in batch[0]]
                marks = ", ".join(f"${n}" for n in range(1, len(columns) + 1))
                names = ", ".join(quoted(c) for c in columns)
                await conn.executemany(
                    f"INSERT INTO {quoted(table.name)} ({names}) VALUES ({marks})",
                    [tuple(_convert(r[c], column_types[c]) for c in columns) for r in batch],
                )
            # Explicit ids leave the identity sequences behind: move each past its table's rows.
            for name, column_types in types.items():
                if "id" in column_types:
                    await conn.execute(
                        f"SELECT setval(pg_get_serial_sequence($1, 'id'),"
                        f" coalesce((SELECT max(id) FROM {quoted(name)}), 0) + 1, false)",
                        name,
                    )


def _convert(value: Any, data_type: str) -> Any:
    convert = _CONVERTERS.get(data_type)
    return value if value is None or convert is None else convert(value)


def _with_search_text(row: Row) -> Row:
    if "search_text" in row:
        return row
    content = rows.decode_content(row["content"], row["content_format"])
    return {**row, "search_text": search_text_of(content, row["tool_calls"])}

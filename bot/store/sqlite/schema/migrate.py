"""Bringing a SQLite database to the latest schema: each migration in its own transaction."""

from __future__ import annotations

import logging
import sqlite3

import aiosqlite

from compactbot.bot.store.sqlite.schema.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
    TRIGRAM,
    UNICODE61,
)

log = logging.getLogger(__name__)


async def detect_fts_tokenizer(conn: aiosqlite.Connection) -> str:
    """`trigram` when this SQLite build has it (3.34+), else `unicode61`."""
    try:
        await conn.execute("CREATE VIRTUAL TABLE temp.fts_probe USING fts5(t, tokenize='trigram')")
    except aiosqlite.OperationalError:
        return UNICODE61
    await conn.execute("DROP TABLE temp.fts_probe")
    return TRIGRAM


async def schema_version(conn: aiosqlite.Connection) -> int:
    await conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at REAL)"
    )
    async with conn.execute("SELECT coalesce(max(version), 0) FROM schema_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


async def apply_migrations(conn: aiosqlite.Connection, *, up_to: int | None = None) -> int:
    """Apply every migration newer than the database's version (up to `up_to`); return the version.

    Needs a connection in autocommit mode (isolation_level=None): each migration runs inside its
    own BEGIN IMMEDIATE ... COMMIT, so a failure leaves the database at the previous version.
    """
    current = await schema_version(conn)
    target = LATEST_VERSION if up_to is None else up_to
    tokenizer = await detect_fts_tokenizer(conn)
    for migration in MIGRATIONS:
        if migration.version <= current or migration.version > target:
            continue
        await conn.execute("BEGIN IMMEDIATE")
        try:
            # Read again under the write lock: another process opening the same fresh file may
            # have applied this migration since the version was first read.
            current = await _version_in(conn)
            if migration.version > current:
                for statement in _statements(migration.render(tokenizer)):
                    await conn.execute(statement)
                await conn.execute(
                    "INSERT INTO schema_version(version, applied_at)"
                    " VALUES (?, strftime('%s', 'now'))",
                    (migration.version,),
                )
                current = migration.version
                log.info(
                    "store schema migrated to version %d (%s)", migration.version, migration.name
                )
            await conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
            raise
    return current


async def _version_in(conn: aiosqlite.Connection) -> int:
    async with conn.execute("SELECT coalesce(max(version), 0) FROM schema_version") as cur:
        row = await cur.fetchone()
    return int(row[0]) if row else 0


def _statements(script: str) -> list[str]:
    """A script's statements, one each (executescript would commit the open transaction)."""
    found: list[str] = []
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip().strip(";").strip():
                found.append(pending.strip())
            pending = ""
    if pending.strip():
        found.append(pending.strip())
    return found

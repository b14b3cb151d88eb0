"""Bringing a PostgreSQL schema to the latest version: each migration in its own transaction,
under a per-schema advisory lock."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, TypeAlias

from compactbot.bot.store.postgres.schema.migrations import LATEST_VERSION, MIGRATIONS

if TYPE_CHECKING:
    import asyncpg
    from asyncpg.pool import PoolConnectionProxy

    # Migrations run on a pooled connection at start-up, or on a plain one in tests.
    AnyConnection: TypeAlias = (
        asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]
    )
log = logging.getLogger(__name__)

# Workers starting together must not migrate the same schema twice; the key is per schema, so
# databases holding several installations (and the tests' schemas) do not wait on each other.
_MIGRATION_LOCK_SQL = (
    "SELECT pg_advisory_xact_lock(hashtext('compactbot.migrate.' || current_schema()))"
)


async def schema_version(conn: AnyConnection) -> int:
    """The schema's version (0 when empty)."""
    exists = await conn.fetchval("SELECT to_regclass('schema_version') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT coalesce(max(version), 0) FROM schema_version"))


async def apply_migrations(conn: AnyConnection, *, up_to: int | None = None) -> int:
    """Apply every migration newer than the schema's version (up to `up_to`); return the version.

    Each migration is its own transaction under a per-schema advisory lock, so a failure leaves
    the schema at the previous version and concurrent workers apply each migration once.
    """
    target = LATEST_VERSION if up_to is None else up_to
    current = 0
    for migration in MIGRATIONS:
        if migration.version > target:
            break
        async with conn.transaction():
            await conn.execute(_MIGRATION_LOCK_SQL)
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_version"
                " (version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
            )
            current = await schema_version(conn)
            if migration.version <= current:
                continue
            await conn.execute(migration.script)
            await conn.execute(
                "INSERT INTO schema_version(version, applied_at) VALUES ($1, $2)",
                migration.version,
                time.time(),
            )
        current = migration.version
        log.info("store schema migrated to version %d (%s)", migration.version, migration.name)
    return current

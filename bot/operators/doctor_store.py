"""Doctor checks of the store: schema version, write access, free disk; pg_trgm on PostgreSQL.

Read-only: the SQLite file is opened with `mode=ro`, and nothing is created where none exists.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sqlite3
from pathlib import Path

from compactbot.bot.app import database_path
from compactbot.bot.operators.doctor_report import Finding, fix, ok, skip
from compactbot.bot.settings.config import Config
from compactbot.bot.store.sqlite.schema.migrations import LATEST_VERSION, TRIGRAM

# Below this much free space SQLite's WAL checkpoints and compactions start failing.
MIN_FREE_DISK_BYTES = 200 * 1024 * 1024
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
POSTGRES_CONNECT_TIMEOUT_SECONDS = 10.0
# Chinese text that must yield trigrams; a C/POSIX ctype gives none and substring search fails.
CJK_PROBE = "压缩机器人"


async def check_store(config: Config, live: bool) -> list[Finding]:
    url = config.storage.database
    if url.startswith(POSTGRES_SCHEMES):
        return await check_postgres_trigram(url)
    path = database_path(config)
    if path == ":memory:":
        return [skip("store", "in memory: nothing persists across restarts")]
    return await asyncio.to_thread(_check_sqlite_file, Path(path))


def _check_sqlite_file(path: Path) -> list[Finding]:
    findings: list[Finding] = []
    folder = path.parent if path.parent != Path("") else Path(".")
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not path.exists():
        if not os.access(existing, os.W_OK):
            findings.append(fix("store", f"cannot create {path}: {existing} is not writable"))
        else:
            findings.append(ok("store", f"no database yet at {path}; it is created at first start"))
    else:
        findings.extend(_check_sqlite_schema(path))
        if not os.access(path, os.W_OK) or not os.access(folder, os.W_OK):
            # SQLite writes the -wal and -shm files beside the database, so the folder counts too.
            findings.append(fix("store", f"{path} or its folder is not writable by this user"))
        else:
            findings.append(ok("store", f"{path} is writable"))
    free = shutil.disk_usage(existing).free
    if free < MIN_FREE_DISK_BYTES:
        findings.append(
            fix("store", f"only {free // 2**20} MiB free on {existing}; keep 200 MiB or more")
        )
    else:
        findings.append(ok("store", f"{free // 2**20:,} MiB free on {existing}"))
    return findings


def _check_sqlite_schema(path: Path) -> list[Finding]:
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    except sqlite3.Error as exc:
        return [fix("store", f"cannot open {path}: {exc}")]
    try:
        version = _read_version(conn)
        row = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'messages_fts'").fetchone()
    except sqlite3.DatabaseError as exc:
        return [fix("store", f"{path} is not a compactbot database ({exc})")]
    finally:
        conn.close()
    tokenizer = "trigram (substring search)" if row and TRIGRAM in row[0] else "unicode61"
    if version > LATEST_VERSION:
        return [
            fix("store", f"schema v{version} is newer than this compactbot (v{LATEST_VERSION})")
        ]
    if version < LATEST_VERSION:
        return [ok("store", f"schema v{version}, migrated to v{LATEST_VERSION} at next start")]
    return [ok("store", f"schema v{version} (current), search index {tokenizer}")]


def _read_version(conn: sqlite3.Connection) -> int:
    exists = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
    ).fetchone()
    if not exists:
        return 0
    row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()
    return int(row[0])


async def check_postgres_trigram(url: str) -> list[Finding]:
    """Runs only when COMPACTBOT_DB is a PostgreSQL URL: reachable, pg_trgm, CJK trigrams."""
    try:
        import asyncpg  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return [fix("store", "COMPACTBOT_DB is PostgreSQL but asyncpg is not installed")]
    try:
        conn = await asyncpg.connect(url, timeout=POSTGRES_CONNECT_TIMEOUT_SECONDS)
    except (OSError, asyncpg.PostgresError) as exc:
        return [fix("store", f"cannot connect to PostgreSQL ({type(exc).__name__})")]
    try:
        has_trgm = await conn.fetchval("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        if not has_trgm:
            return [fix("store", "pg_trgm is not installed: CREATE EXTENSION pg_trgm")]
        trigrams = await conn.fetchval("SELECT cardinality(show_trgm($1))", CJK_PROBE)
    finally:
        await conn.close()
    if not trigrams:
        return [
            fix("store", "the database ctype yields no trigrams for CJK text: use a UTF-8 locale")
        ]
    return [ok("store", "PostgreSQL reachable, pg_trgm installed, CJK trigrams work")]

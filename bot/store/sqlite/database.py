"""The SQLite connection pair: one writer behind an asyncio lock, one read-only WAL reader."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import aiosqlite

from compactbot.bot.store.base import StoreError
from compactbot.bot.store.sqlite.schema.migrate import apply_migrations
from compactbot.bot.store.sqlite.schema.migrations import TRIGRAM, UNICODE61

BUSY_TIMEOUT_MS = 5000  # another process (the CLI) may hold the write lock briefly

# aiosqlite logs every statement's parameters (message text, pasted keys) at DEBUG.
logging.getLogger("aiosqlite").setLevel(logging.INFO)
MEMORY = ":memory:"
PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600

T = TypeVar("T")


class Database:
    """Owns the connections. Writes run one at a time in BEGIN IMMEDIATE transactions.

    `read_only` opens the file with SQLite's mode=ro (no migrations, no writer), so operator
    reports work on a copy the process may not write, and never change a live database.
    """

    def __init__(self, path: str | Path, *, read_only: bool = False) -> None:
        self.path = str(path)
        self.read_only = read_only
        self._writer: aiosqlite.Connection | None = None
        self._reader: aiosqlite.Connection | None = None
        self._write_lock = asyncio.Lock()
        self.fts_tokenizer = UNICODE61
        # The index is filled behind the writer (schema 10); False on an older read-only file.
        self.fts_watermark = True
        # Called with each committed transaction's seconds, waiting for the writer included.
        self.on_commit: Callable[[float], None] | None = None

    @property
    def is_open(self) -> bool:
        return self._writer is not None or self._reader is not None

    async def open(self) -> None:
        if self.is_open:
            return
        if self.read_only:
            self._reader = await _connect_read_only(self.path)
            self.fts_tokenizer = await _schema_tokenizer(self._reader)
            self.fts_watermark = await _has_fts_watermark(self._reader)
            return
        in_memory = self.path == MEMORY
        if not in_memory:
            await asyncio.to_thread(_private_files, Path(self.path))
        writer = await self._connect()
        try:
            await apply_migrations(writer)
            self.fts_tokenizer = await _schema_tokenizer(writer)
            # An in-memory database exists only on its own connection, so reads share it.
            self._reader = writer if in_memory else await self._connect(query_only=True)
        except BaseException:
            await writer.close()
            raise
        self._writer = writer

    async def close(self) -> None:
        writer, reader = self._writer, self._reader
        self._writer = self._reader = None
        if reader is not None and reader is not writer:
            await reader.close()
        if writer is not None:
            await writer.close()

    async def __aenter__(self) -> Database:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def _connect(self, *, query_only: bool = False) -> aiosqlite.Connection:
        # isolation_level=None: transactions are the explicit BEGIN IMMEDIATE / COMMIT below.
        conn = await aiosqlite.connect(self.path, isolation_level=None)
        conn.row_factory = aiosqlite.Row
        try:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA foreign_keys=ON")
            await conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            await conn.execute("PRAGMA synchronous=NORMAL")
            if query_only:
                await conn.execute("PRAGMA query_only=ON")
            else:
                # Deleted rows are zeroed, not left in free space: forgetting removes the bytes.
                await conn.execute("PRAGMA secure_delete=ON")
        except BaseException:
            await conn.close()
            raise
        return conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """One BEGIN IMMEDIATE transaction; committed on exit, rolled back on any exception."""
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.path} is open read-only")
        started = time.perf_counter()
        async with self._write_lock:
            conn = _require(self._writer)
            try:
                await conn.execute("BEGIN IMMEDIATE")
                yield conn
                await conn.execute("COMMIT")
                if self.on_commit is not None:
                    self.on_commit(time.perf_counter() - started)
            except BaseException:
                # Even when cancelled mid-statement: aiosqlite runs statements in order, so this
                # ROLLBACK follows whatever was in flight and no transaction outlives the lock.
                await _rollback(conn)
                raise

    async def run_in_writer(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` on the writer's thread as ONE BEGIN IMMEDIATE transaction, one thread hop.

        `fn` gets the plain sqlite3 connection and must neither commit nor touch the event loop.
        Guarantees are those of `transaction()`: all or nothing, one writer at a time.
        """
        if self.read_only:
            raise ReadOnlyStoreError(f"{self.path} is open read-only")
        started = time.perf_counter()
        async with self._write_lock:
            conn = _require(self._writer)
            # aiosqlite's own queue, so `fn` runs in order with every other statement. Even if
            # the caller is cancelled, `fn` runs whole on the thread with its COMMIT or ROLLBACK.
            result: T = await conn._execute(_in_transaction, conn, fn)
        if self.on_commit is not None:
            self.on_commit(time.perf_counter() - started)
        return result

    async def checkpoint(self) -> None:
        """Copy the WAL into the database and truncate it: no old page image stays on disk."""
        if self.read_only or self.path == MEMORY:
            return
        async with self._write_lock:
            await _require(self._writer).execute_fetchall("PRAGMA wal_checkpoint(TRUNCATE)")

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        reader = _require(self._reader)
        if reader is self._writer:
            # A shared connection would otherwise see another task's uncommitted transaction.
            async with self._write_lock:
                return list(await reader.execute_fetchall(sql, params))
        return list(await reader.execute_fetchall(sql, params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        found = await self.fetchall(sql, params)
        return found[0] if found else None


class ReadOnlyStoreError(StoreError):
    """A write was attempted on a store opened read-only."""


async def _connect_read_only(path: str) -> aiosqlite.Connection:
    """mode=ro; immutable=1 when SQLite cannot create the WAL index beside a read-only file."""
    if path == MEMORY or not await asyncio.to_thread(Path(path).is_file):
        raise StoreError(f"no database at {path}")
    uri = (await asyncio.to_thread(Path(path).resolve)).as_uri()
    last: sqlite3.Error | None = None
    for query in ("?mode=ro", "?mode=ro&immutable=1"):
        conn = await aiosqlite.connect(uri + query, uri=True, isolation_level=None)
        conn.row_factory = aiosqlite.Row
        try:
            await conn.execute("PRAGMA query_only=ON")
            await conn.execute("SELECT count(*) FROM schema_version")
        except sqlite3.Error as exc:
            await conn.close()
            last = exc
            continue
        return conn
    raise StoreError(f"cannot read the database at {path}: {last}")


async def one(conn: aiosqlite.Connection, sql: str, params: Sequence[Any] = ()) -> Any:
    """The first row of a query run inside a transaction, or None."""
    found = await conn.execute_fetchall(sql, params)
    return next(iter(found), None)


async def _rollback(conn: aiosqlite.Connection) -> None:
    try:
        await conn.execute("ROLLBACK")
    except sqlite3.OperationalError:
        pass  # no transaction was open (BEGIN failed, or COMMIT had already completed)


def _in_transaction(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """On the writer's thread: `fn` between BEGIN IMMEDIATE and COMMIT, rolled back if it raises."""
    raw = conn._conn
    raw.execute("BEGIN IMMEDIATE")
    try:
        result = fn(raw)
        raw.execute("COMMIT")
    except BaseException:
        try:
            raw.execute("ROLLBACK")
        except sqlite3.OperationalError:
            pass  # BEGIN had failed, or COMMIT had already completed
        raise
    return result


def _private_files(path: Path) -> None:
    """The data directory 0700 when created here, the database and its -wal/-shm 0600.

    The file is created before SQLite opens it: SQLite gives -wal and -shm the mode of the
    database file, so no other local user can read a message from any of them.
    """
    path.parent.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE))
    for suffix in ("", "-wal", "-shm"):
        found = path.with_name(path.name + suffix)
        with contextlib.suppress(FileNotFoundError, PermissionError):
            if found.stat().st_mode & 0o777 != PRIVATE_FILE_MODE:
                found.chmod(PRIVATE_FILE_MODE)  # a database an older version created 0644


def _require(conn: aiosqlite.Connection | None) -> aiosqlite.Connection:
    if conn is None:
        raise StoreError("store is not open")
    return conn


async def _schema_tokenizer(conn: aiosqlite.Connection) -> str:
    """The tokenizer the index was built with, which may predate this SQLite's capabilities."""
    row = await one(conn, "SELECT sql FROM sqlite_master WHERE name = 'messages_fts'")
    return TRIGRAM if row is not None and TRIGRAM in row[0] else UNICODE61


async def _has_fts_watermark(conn: aiosqlite.Connection) -> bool:
    row = await one(conn, "SELECT 1 FROM sqlite_master WHERE name = 'fts_indexed'")
    return row is not None

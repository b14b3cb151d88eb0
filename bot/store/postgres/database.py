"""The PostgreSQL connection pool: migrations at open, transactions, and a DSN safe to log."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit

import asyncpg

from compactbot.bot.store.base import StoreError
from compactbot.bot.store.postgres.schema.migrate import apply_migrations

if TYPE_CHECKING:
    from asyncpg.pool import PoolConnectionProxy

    from compactbot.bot.store.postgres.schema.migrations import AnyConnection

    # A connection inside `transaction()`.
    PooledConnection: TypeAlias = PoolConnectionProxy[asyncpg.Record]

log = logging.getLogger(__name__)

T = TypeVar("T")
POOL_MIN_SIZE = 1
# Turns hold a connection only for a statement or a short transaction, never across an LLM call.
POOL_MAX_SIZE = 10
COMMAND_TIMEOUT_SECONDS = 30.0
CONNECT_TIMEOUT_SECONDS = 10.0
IDLE_CONNECTION_LIFETIME_SECONDS = 300.0
# A database whose ctype does not class CJK characters as letters makes no trigrams of them.
CJK_PROBE_TEXT = "中文测试"
# Batches lock several sessions' rows in arrival order, so two workers can deadlock; the server
# aborts one transaction whole, and running it again is safe.
DEADLOCK_ATTEMPTS = 3


class PostgresDatabase:
    """Owns the pool. Writes run in READ COMMITTED transactions; row locks order the writers."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._pool: asyncpg.Pool[asyncpg.Record] | None = None
        self.cjk_trigrams = True
        # Called with each committed transaction's seconds, waiting for a connection included.
        self.on_commit: Callable[[float], None] | None = None

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    async def open(self) -> None:
        if self._pool is not None:
            return
        try:
            pool = await asyncpg.create_pool(
                self.dsn,
                min_size=POOL_MIN_SIZE,
                max_size=POOL_MAX_SIZE,
                command_timeout=COMMAND_TIMEOUT_SECONDS,
                timeout=CONNECT_TIMEOUT_SECONDS,
                max_inactive_connection_lifetime=IDLE_CONNECTION_LIFETIME_SECONDS,
            )
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as err:
            # The driver's message names the host and user, never the password.
            raise StoreError(f"cannot connect to {redacted_dsn(self.dsn)}: {err}") from None
        try:
            async with pool.acquire() as conn:
                await apply_migrations(conn)
                self.cjk_trigrams = await _has_cjk_trigrams(conn)
        except BaseException:
            await pool.close()
            raise
        if not self.cjk_trigrams:
            log.warning(
                "database %s: its ctype makes no trigrams of CJK text, so Chinese and Japanese"
                " search cannot use the trigram index and scans every message of the chat;"
                " create the database with a UTF-8 ctype such as C.UTF-8 or en_US.UTF-8",
                redacted_dsn(self.dsn),
            )
        self._pool = pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PooledConnection]:
        """One transaction on a pooled connection; committed on exit, rolled back on any error."""
        started = time.perf_counter()
        async with _require(self._pool).acquire() as conn:
            async with conn.transaction():
                yield conn
            if self.on_commit is not None:
                self.on_commit(time.perf_counter() - started)

    async def retried(self, work: Callable[[PooledConnection], Awaitable[T]]) -> T:
        """`work` in one transaction, run again if the server aborted it to break a deadlock."""
        attempt = 1
        while True:
            try:
                async with self.transaction() as conn:
                    return await work(conn)
            except asyncpg.DeadlockDetectedError:
                if attempt == DEADLOCK_ATTEMPTS:
                    raise
                attempt += 1
                log.info(
                    "transaction aborted by a deadlock, running it again (attempt %d)", attempt
                )

    async def write_one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """One statement as its own transaction (one round trip); the first row it returns."""
        started = time.perf_counter()
        row = await _require(self._pool).fetchrow(sql, *params)
        if self.on_commit is not None:
            self.on_commit(time.perf_counter() - started)
        return row

    async def vacuum(self, tables: Sequence[str]) -> None:
        """VACUUM `tables` (outside any transaction, as PostgreSQL requires)."""
        await _require(self._pool).execute(f"VACUUM {', '.join(tables)}")

    async def fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        return list(await _require(self._pool).fetch(sql, *params))

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return await _require(self._pool).fetchrow(sql, *params)


def affected(status: str) -> int:
    """Rows an INSERT/UPDATE/DELETE touched, from asyncpg's command status ("UPDATE 3")."""
    return int(status.rsplit(" ", 1)[-1])


def redacted_dsn(dsn: str) -> str:
    """The DSN with any password (in the user part or the query) replaced by ***."""
    parts = urlsplit(dsn)
    netloc = parts.netloc
    if parts.password is not None:
        userinfo, _, hostinfo = netloc.rpartition("@")
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:***@{hostinfo}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode(
            [(k, "***" if k.lower() == "password" else v) for k, v in pairs], safe="*,"
        )
    return parts._replace(netloc=netloc, query=query).geturl()


async def _has_cjk_trigrams(conn: AnyConnection) -> bool:
    return bool(await conn.fetchval("SELECT cardinality(show_trgm($1)) > 0", CJK_PROBE_TEXT))


def _require(pool: asyncpg.Pool[asyncpg.Record] | None) -> asyncpg.Pool[asyncpg.Record]:
    if pool is None:
        raise StoreError("store is not open")
    return pool

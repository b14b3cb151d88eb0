"""Fixtures for the storage contract suite: every test runs on SQLite and on PostgreSQL.

`store` is a fresh store of the backend the test is parametrised with (a new SQLite file, or a new
PostgreSQL schema); `open_fresh_store()` opens more of them, e.g. one per Hypothesis example.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import pytest

from compactbot.bot.store import PostgresStore, SqliteStore
from compactbot.bot.store.backends import Store
from tests import postgres_server

START_TIME = 1_800_000_000.0
BACKENDS = ("sqlite", "postgresql")
# What a violated CHECK or constraint raises, per driver.
INTEGRITY_ERRORS = (sqlite3.IntegrityError, asyncpg.IntegrityConstraintViolationError)

FreshStore = Callable[[], AbstractAsyncContextManager[Store]]
# Another store on the same database as the one given: what a second process would open.
SameStore = Callable[[Store], AbstractAsyncContextManager[Store]]


@dataclass
class ManualClock:
    now: float = START_TIME

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def pg(clock: ManualClock) -> AsyncIterator[PostgresStore]:
    """A PostgreSQL store on a fresh schema (the tests of what only PostgreSQL has)."""
    server = postgres_server.require_server()
    async with (
        postgres_server.fresh_schema(server) as dsn,
        PostgresStore(dsn, clock=clock) as opened,
    ):
        yield opened


@pytest.fixture
async def second(pg: PostgresStore, clock: ManualClock) -> AsyncIterator[PostgresStore]:
    """Another worker's store on the same schema."""
    async with PostgresStore(pg.dsn, clock=clock) as opened:
        yield opened


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql":
        postgres_server.require_server()
    return str(request.param)


@pytest.fixture
def locations() -> dict[int, Path | str]:
    """Where each store `open_fresh_store` opened lives (file or DSN), by the store's id()."""
    return {}


@pytest.fixture
def open_fresh_store(
    backend: str, tmp_path: Path, clock: ManualClock, locations: dict[int, Path | str]
) -> FreshStore:
    numbers = itertools.count()

    @asynccontextmanager
    async def fresh() -> AsyncIterator[Store]:
        if backend == "sqlite":
            path = tmp_path / f"store-{next(numbers)}.db"
            async with SqliteStore(path, clock=clock) as opened:
                locations[id(opened)] = path
                yield opened
            return
        async with (
            postgres_server.fresh_schema(postgres_server.base_dsn()) as dsn,
            PostgresStore(dsn, clock=clock) as opened,
        ):
            locations[id(opened)] = dsn
            yield opened

    return fresh


@pytest.fixture
def open_same_store(
    backend: str, clock: ManualClock, locations: dict[int, Path | str]
) -> SameStore:
    @asynccontextmanager
    async def same(store: Store) -> AsyncIterator[Store]:
        location = locations[id(store)]
        other: Store
        if backend == "sqlite":
            other = SqliteStore(location, clock=clock)
        else:
            other = PostgresStore(str(location), clock=clock)
        await other.open()
        try:
            yield other
        finally:
            await other.close()

    return same


@pytest.fixture
async def store(open_fresh_store: FreshStore) -> AsyncIterator[Store]:
    async with open_fresh_store() as opened:
        yield opened

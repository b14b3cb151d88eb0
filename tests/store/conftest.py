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

from bot.store import PostgresStore, SqliteStore, Store
from tests import postgres_server

START_TIME = 1_800_000_000.0
BACKENDS = ("sqlite", "postgresql")
# What a violated CHECK or constraint raises, per driver.
INTEGRITY_ERRORS = (sqlite3.IntegrityError, asyncpg.IntegrityConstraintViolationError)

FreshStore = Callable[[], AbstractAsyncContextManager[Store]]


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


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgresql":
        postgres_server.require_server()
    return str(request.param)


@pytest.fixture
def open_fresh_store(backend: str, tmp_path: Path, clock: ManualClock) -> FreshStore:
    numbers = itertools.count()

    @asynccontextmanager
    async def fresh() -> AsyncIterator[Store]:
        if backend == "sqlite":
            async with SqliteStore(tmp_path / f"store-{next(numbers)}.db", clock=clock) as opened:
                yield opened
            return
        async with (
            postgres_server.fresh_schema(postgres_server.base_dsn()) as dsn,
            PostgresStore(dsn, clock=clock) as opened,
        ):
            yield opened

    return fresh


@pytest.fixture
async def store(open_fresh_store: FreshStore) -> AsyncIterator[Store]:
    async with open_fresh_store() as opened:
        yield opened

"""Fixtures for store tests: a fresh SQLite file per test and a clock the test moves by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from bot.store import SqliteStore

START_TIME = 1_800_000_000.0


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
async def store(tmp_path: Path, clock: ManualClock) -> AsyncIterator[SqliteStore]:
    async with SqliteStore(tmp_path / "store.db", clock=clock) as opened:
        yield opened

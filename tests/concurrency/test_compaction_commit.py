"""A compaction commits in one transaction, under a lease whose failures stop it cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiosqlite
import pytest

from compactbot.bot.compaction.session_compactor import SessionCompactor
from compactbot.bot.store.backends import Store
from compactbot.bot.store.base import CompressionEvent, NewMessage, SessionRecord, StoredMessage
from compactbot.bot.store.sqlite.database import Database
from compactbot.bot.store.sqlite.store import SqliteStore
from compactbot.bot.turns.exclusivity import StoreLeases, new_lock_holder
from compactbot.compression import CompressorConfig
from compactbot.compression.tokens import counter_for
from tests.concurrency.rig import GatedSummarizer, chatter_text
from tests.store.conftest import FreshStore, ManualClock
from tests.store.factories import summary, user

SETTINGS = CompressorConfig(context_length=100_000, protect_last_n=5)


class InjectedCrash(Exception):
    pass


@dataclass
class CrashingConnection:
    """Proxies the writer connection; the `crash_at`-th statement raises instead of running."""

    inner: aiosqlite.Connection
    crash_at: int | None
    statements: int = 0

    def _step(self) -> None:
        if self.crash_at is not None and self.statements == self.crash_at:
            raise InjectedCrash(self.statements)
        self.statements += 1

    async def execute(self, *args: Any) -> Any:
        self._step()
        return await self.inner.execute(*args)

    async def executemany(self, *args: Any) -> Any:
        self._step()
        return await self.inner.executemany(*args)

    async def execute_fetchall(self, *args: Any) -> Any:
        self._step()
        return await self.inner.execute_fetchall(*args)


@dataclass
class CrashingDatabase(Database):
    """A Database whose next transaction runs on a CrashingConnection."""

    armed: CrashingConnection | None = field(default=None)

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[Any]:
        async with super().transaction() as conn:
            if self.armed is None:
                yield conn
                return
            self.armed.inner = conn
            yield self.armed


def crashing_store(path: Path, clock: ManualClock) -> tuple[SqliteStore, CrashingDatabase]:
    store = SqliteStore(path, clock=clock)
    database = CrashingDatabase.__new__(CrashingDatabase)
    Database.__init__(database, path)
    database.armed = None
    store._db = database  # the test's seam into the one transaction; no other code path
    return store, database


async def snapshot(store: Store, session_id: int) -> tuple[Any, ...]:
    session = await store.get_session(session_id)
    rows: list[StoredMessage] = await store.load_active(session_id)
    events = await store.list_compression_events()
    return (
        session,
        [(r.id, r.role, r.content, r.kind) for r in rows],
        [e.outcome for e in events],
        await store.lock_holder(session_id),
    )


async def seeded(store: Store) -> tuple[SessionRecord, list[int]]:
    session = await store.active_session("test:g1")
    ids = await store.append_messages(session.id, [user(chatter_text(i), 200) for i in range(20)])
    return await store.get_session(session.id), ids


async def commit(store: Store, session: SessionRecord, ids: list[int], holder: str) -> Any:
    return await store.archive_and_compact(
        session,
        [summary("[CONTEXT COMPACTION] the gist"), NewMessage("user", "kept", 3)],
        ids[8],
        state=lambda s: type(s)(compression_count=s.compression_count + 1, last_prompt_tokens=-1),
        system_prompt="new system prompt",
        event=CompressionEvent("test:g1", session.id, "manual", 1.0, 2.0, "compressed"),
        holder=holder,
    )


async def test_crash_between_any_two_steps_of_the_commit_leaves_the_old_session_whole(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    template = tmp_path / "template.db"
    async with SqliteStore(template, clock=clock) as store:
        session, ids = await seeded(store)
        holder = new_lock_holder("manual")
        assert await store.acquire_lock(session.id, holder, 300)
        before = await snapshot(store, session.id)
    # A dry run counts the statements of the commit; then a crash is injected before each.
    dry = tmp_path / "dry.db"
    shutil.copy(template, dry)
    store, database = crashing_store(dry, clock)
    async with store:
        database.armed = counting = CrashingConnection(None, None)  # type: ignore[arg-type]
        assert await commit(store, session, ids, holder) is not None
        database.armed = None
        after = await snapshot(store, session.id)
    steps = counting.statements
    assert steps >= 8 and after[0].compressor.compression_count == 1 and after[3] is None
    for crash_at in range(steps):
        path = tmp_path / f"crash-{crash_at}.db"
        shutil.copy(template, path)
        store, database = crashing_store(path, clock)
        async with store:
            database.armed = CrashingConnection(None, crash_at)  # type: ignore[arg-type]
            with pytest.raises(InjectedCrash):
                await commit(store, session, ids, holder)
            database.armed = None
            assert await snapshot(store, session.id) == before, f"crash at step {crash_at}"
            # ... and the same commit, retried, lands whole.
            assert await commit(store, session, ids, holder) is not None
            assert await snapshot(store, session.id) == after


async def test_losing_commit_changes_nothing(store: Store) -> None:
    session, ids = await seeded(store)
    holder = new_lock_holder("manual")
    assert await store.acquire_lock(session.id, holder, 300)
    assert await commit(store, session, ids, holder) is not None
    after = await snapshot(store, session.id)
    stale = session  # the version the loser read
    assert await store.acquire_lock(session.id, holder, 300)
    assert await commit(store, stale, ids, holder) is None
    assert await snapshot(store, session.id) == (*after[:3], holder)


async def test_commit_of_a_holder_whose_lease_was_taken_over_changes_nothing(
    store: Store, clock: ManualClock
) -> None:
    session, ids = await seeded(store)
    before = await snapshot(store, session.id)
    assert await store.acquire_lock(session.id, "slow", 300)
    clock.advance(301)  # the slow holder's lease expires and another worker takes it
    assert await store.acquire_lock(session.id, "next", 300)
    assert await commit(store, session, ids, "slow") is None
    assert await snapshot(store, session.id) == (*before[:3], "next")
    # The new owner's commit, at the same version, lands whole and frees its lease.
    landed = await commit(store, session, ids, "next")
    assert landed is not None and landed.version == session.version + 1
    after = await snapshot(store, session.id)
    assert after[0].compressor.compression_count == 1 and after[0].system_prompt is not None
    assert after[2] == ["compressed"] and after[3] is None
    assert [kind for _, _, _, kind in after[1]][:1] == ["summary"]
    assert (after[0].active_tokens, after[0].active_messages) == await store.recount(session.id)


async def test_commit_applies_the_state_delta_to_the_freshest_state(store: Store) -> None:
    session, ids = await seeded(store)
    # A turn writes its own field after the compaction read the session.
    written = await store.apply_state_delta(
        session.id, session.version, lambda s: replace(s, failure_streak=2)
    )
    assert written is not None and written.failure_streak == 2
    holder = new_lock_holder("manual")
    assert await commit(store, session, ids, holder) is None  # no lease taken: refused
    assert await store.acquire_lock(session.id, holder, 300)
    landed = await store.archive_and_compact(
        session,
        [summary("the gist")],
        ids[8],
        state=lambda s: replace(s, compression_count=s.compression_count + 1),
        holder=holder,
    )
    assert landed is not None and landed.inserted_ids
    fresh = await store.get_session(session.id)
    # The commit's delta ran on the stored state, so the turn's write survives it.
    assert (fresh.compressor.compression_count, fresh.compressor.failure_streak) == (1, 2)
    # A delta against the version the compaction replaced writes nothing.
    assert await store.apply_state_delta(session.id, session.version, lambda s: s) is None
    assert (await store.get_session(session.id)).compressor == fresh.compressor


@dataclass
class FailingRenewals:
    """A store whose lease renewal raises "database is locked" once `fail` is set."""

    inner: Store
    fail: asyncio.Event = field(default_factory=asyncio.Event)
    after_commit: asyncio.Event = field(default_factory=asyncio.Event)
    raised: asyncio.Event = field(default_factory=asyncio.Event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def renew_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool:
        await self.fail.wait()
        self.raised.set()
        raise sqlite3.OperationalError("database is locked")

    async def archive_and_compact(self, *args: Any, **kwargs: Any) -> Any:
        commit = await self.inner.archive_and_compact(*args, **kwargs)
        if self.after_commit.is_set():
            self.fail.set()
            await self.raised.wait()  # the renewal fails after the commit, before we return
        return commit


async def immediate(_seconds: float) -> None:
    await asyncio.sleep(0)


async def never(_seconds: float) -> None:
    await asyncio.Event().wait()


async def test_renewal_failure_after_the_commit_raises_nothing(
    store: Store, clock: ManualClock
) -> None:
    session, _ = await seeded(store)
    leased = FailingRenewals(store)
    leased.after_commit.set()
    summarizer = GatedSummarizer()
    summarizer.release.set()
    compactor = SessionCompactor(
        leased,  # type: ignore[arg-type]
        counter_for(None),
        summarizer.factory,
        clock=clock,
        leases=StoreLeases(leased, ttl_seconds=300, sleep=immediate),  # type: ignore[arg-type]
        sleep=immediate,
    )
    report = await compactor.compact(
        session.id, trigger="manual", settings=SETTINGS, system_prompt="s", force=True
    )
    assert report.outcome == "compressed", report
    assert await store.lock_holder(session.id) is None
    assert [e.outcome for e in await store.list_compression_events()] == ["compressed"]


async def test_renewal_failure_before_the_commit_stops_the_compaction_cleanly(
    store: Store, clock: ManualClock
) -> None:
    session, _ = await seeded(store)
    before = await snapshot(store, session.id)
    leased = FailingRenewals(store)
    summarizer = GatedSummarizer()  # never released: the summary hangs
    compactor = SessionCompactor(
        leased,  # type: ignore[arg-type]
        counter_for(None),
        summarizer.factory,
        clock=clock,
        leases=StoreLeases(leased, ttl_seconds=300, sleep=immediate),  # type: ignore[arg-type]
        sleep=immediate,
    )
    task = asyncio.create_task(
        compactor.compact(
            session.id, trigger="manual", settings=SETTINGS, system_prompt="s", force=True
        )
    )
    await summarizer.started.wait()
    leased.fail.set()
    report = await task
    assert (report.outcome, report.error) == ("error", "lease lost")
    session_after, rows, _, holder = await snapshot(store, session.id)
    assert (session_after, rows, holder) == (before[0], before[1], None)


async def test_stale_lease_of_a_dead_process_is_reclaimed_at_startup(store: Store) -> None:
    dead = subprocess.run(  # noqa: ASYNC221 (a process that has exited: its pid is free)
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(dead.stdout)
    first = await store.active_session("test:a")
    second = await store.active_session("test:b")
    host = new_lock_holder("x").split(":")[0]
    assert await store.acquire_lock(first.id, f"{host}:{dead_pid}:hygiene:1", 300)
    assert await store.acquire_lock(second.id, "other-host:1:hygiene:1", 300)
    assert await StoreLeases(store).reclaim_dead() == 1
    assert await store.lock_holder(first.id) is None
    # Another host's holder may be alive: only its expiry frees the session.
    assert await store.lock_holder(second.id) == "other-host:1:hygiene:1"


@dataclass
class CrashingCalls:
    """The real store, except that its `crash_at`-th call (of any method) raises."""

    inner: Store
    crash_at: int | None = None
    calls: list[str] = field(default_factory=list)

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not asyncio.iscoroutinefunction(attribute):
            return attribute

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self.crash_at is not None and len(self.calls) == self.crash_at:
                self.calls.append(name)
                raise InjectedCrash(name)
            self.calls.append(name)
            return await attribute(*args, **kwargs)

        return call


async def test_crash_between_any_two_steps_of_a_compaction_leaves_old_or_new_whole(
    open_fresh_store: FreshStore, clock: ManualClock
) -> None:
    summarizer = GatedSummarizer()
    summarizer.release.set()

    def compactor_on(store: CrashingCalls) -> SessionCompactor:
        return SessionCompactor(
            store,  # type: ignore[arg-type]
            counter_for(None),
            summarizer.factory,
            clock=clock,
            leases=StoreLeases(store, ttl_seconds=300, sleep=immediate),  # type: ignore[arg-type]
            sleep=never,  # the renewer never wakes: only the compaction's own steps are counted
        )

    # Every run starts from its own store seeded alike, so the same ids and totals.
    async with open_fresh_store() as raw:
        session, _ = await seeded(raw)
        before = (await snapshot(raw, session.id))[:2]
        clean = CrashingCalls(raw)
        report = await compactor_on(clean).compact(
            session.id, trigger="manual", settings=SETTINGS, system_prompt="s", force=True
        )
        assert report.changed
        after = (await snapshot(raw, session.id))[:2]
    steps = len(clean.calls)
    assert "archive_and_compact" in clean.calls and steps >= 5
    for crash_at in range(steps):
        async with open_fresh_store() as raw:
            await seeded(raw)
            store = CrashingCalls(raw, crash_at)
            with contextlib.suppress(InjectedCrash):
                await compactor_on(store).compact(
                    session.id, trigger="manual", settings=SETTINGS, system_prompt="s", force=True
                )
            state = (await snapshot(raw, session.id))[:2]
            committed = "archive_and_compact" in store.calls[:crash_at]
            # The commit is the one step that changes the session: before it, the old session.
            assert state == (after if committed else before), f"crash at {store.calls[-1]}"

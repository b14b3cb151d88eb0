"""The overnight job runs only where the lead is (SPEC 15): one worker of many, and another soon
after that one dies."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
import pytest

from compactbot.bot.app import App
from compactbot.bot.compaction.session_compactor import UsageSink
from compactbot.bot.settings.config import Config
from compactbot.bot.workers.leadership import AdvisoryLeadership, SoleLeader
from compactbot.compression.summarizer import Summarizer, SummaryRequest
from compactbot.scheduler.job import compact_candidates
from compactbot.scheduler.overnight import OvernightScheduler
from compactbot.scheduler.selection import select_sessions
from tests import postgres_server
from tests.harness import make_config
from tests.scheduler.builders import FakeClock, GatedSummarizer, fill_session
from tests.scheduler.test_overnight_job import use_summarizer

FAILOVER_DEADLINE_SECONDS = 10.0
SETTLE_SECONDS = 10.0
POLL_SECONDS = 0.02
BIG = 70  # about 6,500 of 8,000 tokens: due overnight once idle
IDLE = timedelta(hours=2)


@dataclass
class RecordingSummarizer:
    """Summarizes at once and keeps whose notes it summarized (each chat has its own author)."""

    authors: set[str] = field(default_factory=set)

    async def summarize(self, request: SummaryRequest) -> str:
        text = " ".join(str(turn.get("content")) for turn in request.turns)
        self.authors.update(name for name in ("Bob", "Carol") if f"[{name}]" in text)
        return f"The group exchanged {len(request.turns)} numbered notes."

    def factory(self) -> Callable[[UsageSink], Summarizer]:
        return lambda _usage: self


@dataclass
class ManualLeadership:
    """A lead the test gives and takes away."""

    leading: asyncio.Event = field(default_factory=asyncio.Event)
    following: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.following.set()

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    def start(self) -> None:
        pass

    async def stop(self) -> None:
        pass

    def lead(self) -> None:
        self.following.clear()
        self.leading.set()

    def lose(self) -> None:
        self.leading.clear()
        self.following.set()


async def _until(condition: Callable[[], bool], deadline_seconds: float) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline_seconds
    while not condition():
        if loop.time() > end:
            pytest.fail(f"condition not met within {deadline_seconds} s")
        await asyncio.sleep(POLL_SECONDS)


def _config(tmp_path: Path, database: str) -> Config:
    yaml = tmp_path / "compactbot.yaml"
    yaml.write_text("overnight:\n  jitter_seconds: 0\n", encoding="utf-8")
    env = {
        "COMPACTBOT_CONTEXT_LENGTH": "8000",
        "COMPACTBOT_CONFIG": str(yaml),
        "COMPACTBOT_DB": database,
    }
    return make_config(tmp_path, env)


def _window_now(now: float) -> str:
    """An overnight window that is open now and for the next hours (APScheduler runs on real
    time, so the chats' windows are placed around it)."""
    start = datetime.fromtimestamp(now, UTC) - timedelta(minutes=30)
    return f"{start:%H:%M}-{start + timedelta(hours=3):%H:%M}"


@pytest.fixture
async def schema_dsn() -> AsyncIterator[str]:
    async with postgres_server.fresh_schema(postgres_server.require_server()) as dsn:
        yield dsn


async def test_a_follower_runs_the_overnight_job_within_ten_seconds_of_the_leader_dying(
    tmp_path: Path, schema_dsn: str
) -> None:
    clock = FakeClock(time.time())
    now = clock.now
    config = _config(tmp_path, schema_dsn)
    first_summaries, second_summaries = RecordingSummarizer(), RecordingSummarizer()
    async with (
        App(config, clock=clock, summarizer_factory=first_summaries.factory()) as first,
        App(config, clock=clock, summarizer_factory=second_summaries.factory()) as second,
    ):
        store = first.services.store
        for chat in ("test:g1", "test:g2"):
            await store.upsert_chat(chat, "test")
            await store.set_chat_setting(chat, "overnight_window", _window_now(now))
        clock.now = now - IDLE.total_seconds()
        await fill_session(first.services, "test:g1", messages=BIG, author="Bob")
        clock.now = now
        leader = OvernightScheduler(first.services, first.gateway, jitter=lambda: 0.0)
        follower = OvernightScheduler(second.services, second.gateway, jitter=lambda: 0.0)
        first_lead = first.services.leadership
        second_lead = second.services.leadership
        assert isinstance(first_lead, AdvisoryLeadership)
        assert isinstance(second_lead, AdvisoryLeadership)
        try:
            await leader.start()
            await asyncio.wait_for(first_lead.leading.wait(), SETTLE_SECONDS)
            await _until(lambda: first_summaries.authors == {"Bob"}, SETTLE_SECONDS)
            await follower.start()
            await _until(lambda: second_lead.attempts >= 2, SETTLE_SECONDS)
            # The follower was refused the lock twice and has scheduled nothing.
            assert not second_lead.is_leader and follower.next_run("test:g1") is None

            # Work for whoever leads next: a second chat's session, idle long enough.
            clock.now = now - IDLE.total_seconds()
            await fill_session(first.services, "test:g2", messages=BIG, author="Carol")
            clock.now = now

            pid = first_lead.backend_pid
            assert pid is not None
            admin = await asyncpg.connect(schema_dsn)
            try:
                died_at = asyncio.get_running_loop().time()
                assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
            finally:
                await admin.close()
            # Its process is gone with its connection: it will not campaign again.
            await first_lead.stop()

            await _until(lambda: "Carol" in second_summaries.authors, FAILOVER_DEADLINE_SECONDS)
            took = asyncio.get_running_loop().time() - died_at

            assert took < FAILOVER_DEADLINE_SECONDS
            assert second_lead.is_leader
            assert first_summaries.authors == {"Bob"}  # the dead leader compacted nothing more
            assert leader.next_run("test:g1") is None  # and its schedule stopped with the lead
            loop = asyncio.get_running_loop()
            end = loop.time() + SETTLE_SECONDS
            while not (events := await store.list_compression_events(chat_key="test:g2")):
                assert loop.time() < end, "the new leader's compaction never committed"
                await asyncio.sleep(POLL_SECONDS)
            assert [(e.trigger, e.outcome) for e in events] == [("overnight", "compressed")]
        finally:
            await follower.stop()
            await leader.stop()


async def test_the_schedule_pauses_while_another_worker_leads_and_resumes_with_the_lead(
    tmp_path: Path,
) -> None:
    async with App(_config(tmp_path, str(tmp_path / "one.db"))) as app:
        await app.services.store.upsert_chat("test:g1", "test")
        lead = ManualLeadership()
        app.services.leadership = lead
        scheduler = OvernightScheduler(app.services, app.gateway)
        await scheduler.start()
        try:
            assert scheduler.next_run("test:g1") is None  # not leading: nothing scheduled
            lead.lead()
            await _until(lambda: scheduler.next_run("test:g1") is not None, SETTLE_SECONDS)
            lead.lose()
            await _until(lambda: scheduler.next_run("test:g1") is None, SETTLE_SECONDS)
            assert await scheduler.run_pass("test:g1") == []  # a job that fires late does nothing
            lead.lead()
            await _until(lambda: scheduler.next_run("test:g1") is not None, SETTLE_SECONDS)
        finally:
            await scheduler.stop()


async def test_a_pass_that_loses_the_lead_starts_no_further_compaction(tmp_path: Path) -> None:
    evening = datetime(2026, 6, 1, 0, 30, tzinfo=UTC)
    clock = FakeClock.at(evening)
    async with App(_config(tmp_path, str(tmp_path / "one.db")), clock=clock) as app:
        for chat in ("test:g1", "test:g2"):
            await fill_session(app.services, chat, messages=BIG)
        clock.now = (evening + timedelta(hours=2, minutes=30)).timestamp()  # in 02:00-05:00
        summarizer = GatedSummarizer()
        use_summarizer(app.services, summarizer, clock)
        candidates = await select_sessions(app.services, clock.now)
        assert len(candidates) == 2
        leading = True

        run = asyncio.create_task(
            compact_candidates(
                app.services, candidates, clock=clock, jitter=lambda: 0.0, leading=lambda: leading
            )
        )
        await asyncio.wait_for(summarizer.started.wait(), SETTLE_SECONDS)
        leading = False  # another worker took the lead during the first compaction
        summarizer.release.set()
        attempts = await asyncio.wait_for(run, SETTLE_SECONDS)

        assert [a.report.outcome for a in attempts] == ["compressed"]  # it finishes, then stops
        untouched = await app.services.store.load_active(candidates[1].session_id)
        assert len(untouched) == BIG


async def test_a_single_process_on_sqlite_always_leads_and_postgres_waits_for_the_job(
    tmp_path: Path,
) -> None:
    async with App(_config(tmp_path, str(tmp_path / "one.db"))) as app:
        assert isinstance(app.services.leadership, SoleLeader)
        assert app.services.leadership.is_leader
    async with (
        postgres_server.fresh_schema(postgres_server.require_server()) as dsn,
        App(_config(tmp_path, dsn)) as app,
    ):
        lead = app.services.leadership
        assert isinstance(lead, AdvisoryLeadership)
        # A CLI command opens the App too; only starting the overnight job campaigns.
        assert lead.attempts == 0 and not lead.is_leader

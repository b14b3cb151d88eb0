from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from compactbot.bot.app import App
from compactbot.bot.compaction.report import CompactionReport
from compactbot.bot.compaction.session_compactor import SessionCompactor
from compactbot.bot.services import Services
from compactbot.compression.summarizer import SummaryAuthError, SummaryRequest
from compactbot.scheduler.overnight import run_overnight
from tests.harness import RecordingAdapter, group_message, make_config
from tests.scheduler.builders import FakeClock, GatedSummarizer, fill_session

SMALL_WINDOW = {"COMPACTBOT_CONTEXT_LENGTH": "8000"}
EVENING = datetime(2026, 6, 1, 0, 30, tzinfo=UTC)
NIGHT = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)  # inside the default 02:00-05:00 UTC window
BIG = 70  # about 6,500 of 8,000 tokens: above min_ratio, below hygiene


def use_summarizer(services: Services, summarizer: Any, clock: FakeClock) -> None:
    services.compactor = SessionCompactor(
        services.store, services.counter, lambda _usage: summarizer, clock=clock
    )


class FailingSummarizer:
    async def summarize(self, request: SummaryRequest) -> str:
        raise SummaryAuthError("invalid api key")


async def test_live_message_during_overnight_compaction_is_kept_after_it_and_answered(
    tmp_path: Path,
) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        services = app.services
        session_id = await fill_session(services, "test:g1", messages=BIG)
        summarizer = GatedSummarizer()
        use_summarizer(services, summarizer, clock)
        clock.now = NIGHT.timestamp()
        adapter = RecordingAdapter()

        night = asyncio.create_task(run_overnight(services, jitter=lambda: 0.0))
        await asyncio.wait_for(summarizer.started.wait(), 5)
        await app.gateway.handle(group_message("still awake? @bot", chat_id="g1"), adapter)
        summarizer.release.set()
        reports = await asyncio.wait_for(night, 5)
        await asyncio.wait_for(app.gateway.join(), 10)

        assert [report.outcome for _, report in reports] == ["compressed"]
        rows = await services.store.load_active(session_id)
        assert len(rows) < BIG
        contents = [r.content for r in rows]
        assert contents.count("[Alice] still awake? @bot") == 1
        live = contents.index("[Alice] still awake? @bot")
        assert any(r.kind == "summary" for r in rows[:live])
        assert all(r.role != "user" for r in rows[live + 1 :])  # only the bot's turn follows
        assert rows[-1].role == "assistant"
        assert len(adapter.texts()) == 1


async def test_five_thousand_message_session_compacted_overnight_needs_no_hygiene_in_the_morning(
    tmp_path: Path,
) -> None:
    clock = FakeClock.at(EVENING)
    config = make_config(tmp_path, {"COMPACTBOT_CONTEXT_LENGTH": "128000"})
    async with App(config, clock=clock) as app:
        services, store = app.services, app.services.store
        session_id = await fill_session(services, "test:g1", messages=5000, words=2)
        assert (await store.get_session(session_id)).active_messages == 5000
        clock.now = NIGHT.timestamp()

        reports = await run_overnight(services, jitter=lambda: 0.0)
        clock.now = datetime(2026, 6, 1, 8, 0, tzinfo=UTC).timestamp()
        adapter = RecordingAdapter()
        await app.gateway.handle(group_message("good morning @bot", chat_id="g1"), adapter)
        await asyncio.wait_for(app.gateway.join(), 10)

        assert [report.outcome for _, report in reports] == ["compressed"]
        triggers = [e.trigger for e in await store.list_compression_events(chat_key="test:g1")]
        assert triggers == ["overnight"]
        assert len(adapter.texts()) == 1


class _CrossesWindowEnd(SessionCompactor):
    """Each compaction takes the clock past the end of the 02:00-05:00 window."""

    def __init__(self, services: Services, clock: FakeClock) -> None:
        super().__init__(services.store, services.counter, lambda _usage: None, clock=clock)
        self.fake_clock = clock

    async def compact(self, session_id: int, **kwargs: Any) -> CompactionReport:
        report = await super().compact(session_id, **kwargs)
        self.fake_clock.now = datetime(2026, 6, 1, 5, 0, tzinfo=UTC).timestamp()
        return report


async def test_no_new_compaction_starts_once_the_window_has_ended(tmp_path: Path) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        services = app.services
        await fill_session(services, "test:first", messages=BIG + 10)
        second = await fill_session(services, "test:second", messages=BIG)
        services.compactor = _CrossesWindowEnd(services, clock)
        clock.now = datetime(2026, 6, 1, 4, 50, tzinfo=UTC).timestamp()

        reports = await run_overnight(services, jitter=lambda: 0.0)

        assert [key for key, _ in reports] == ["test:first"]
        assert (await services.store.get_session(second)).active_messages == BIG
        events = await services.store.list_compression_events()
        assert [e.chat_key for e in events] == ["test:first"]


async def test_failed_overnight_compaction_posts_one_line_in_its_chat(tmp_path: Path) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        services = app.services
        session_id = await fill_session(services, "test:g1", messages=BIG)
        use_summarizer(services, FailingSummarizer(), clock)
        clock.now = NIGHT.timestamp()
        posted: list[tuple[str, str]] = []

        async def notify(chat_key: str, text: str) -> None:
            posted.append((chat_key, text))

        reports = await run_overnight(services, jitter=lambda: 0.0, notify=notify)

        assert [report.outcome for _, report in reports] == ["aborted"]
        assert [key for key, _ in posted] == ["test:g1"]
        assert "\n" not in posted[0][1]
        assert (await services.store.get_session(session_id)).active_messages == BIG
        events = await services.store.list_compression_events()
        assert [(e.trigger, e.outcome) for e in events] == [("overnight", "aborted")]


async def test_successful_overnight_compaction_posts_nothing(tmp_path: Path) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        await fill_session(app.services, "test:g1", messages=BIG)
        clock.now = NIGHT.timestamp()
        posted: list[tuple[str, str]] = []

        async def notify(chat_key: str, text: str) -> None:
            posted.append((chat_key, text))

        reports = await run_overnight(app.services, jitter=lambda: 0.0, notify=notify)

        assert [report.outcome for _, report in reports] == ["compressed"]
        assert posted == []


async def test_jitter_spaces_compactions_after_the_first(tmp_path: Path) -> None:
    clock = FakeClock.at(EVENING)
    async with App(make_config(tmp_path, SMALL_WINDOW), clock=clock) as app:
        for number in range(3):
            await fill_session(app.services, f"test:g{number}", messages=BIG)
        clock.now = NIGHT.timestamp()
        asked: list[int] = []

        def jitter() -> float:
            asked.append(1)
            return 0.0

        reports = await run_overnight(app.services, jitter=jitter)

        assert len(reports) == 3
        assert len(asked) == 2


class _PairedSummarizer:
    """Holds each summary until two are in flight at once; records the most ever in flight."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.peak = 0
        self.pair = asyncio.Event()

    async def summarize(self, request: SummaryRequest) -> str:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight == 2:
            self.pair.set()
        await self.pair.wait()
        self.in_flight -= 1
        return "The group exchanged numbered notes."


async def test_compactions_run_at_most_concurrency_at_once(tmp_path: Path) -> None:
    yaml = tmp_path / "compactbot.yaml"
    yaml.write_text("overnight:\n  concurrency: 2\n", encoding="utf-8")
    config = make_config(tmp_path, {**SMALL_WINDOW, "COMPACTBOT_CONFIG": str(yaml)})
    clock = FakeClock.at(EVENING)
    async with App(config, clock=clock) as app:
        for number in range(4):
            await fill_session(app.services, f"test:g{number}", messages=BIG)
        summarizer = _PairedSummarizer()
        use_summarizer(app.services, summarizer, clock)
        clock.now = NIGHT.timestamp()

        reports = await asyncio.wait_for(run_overnight(app.services, jitter=lambda: 0.0), 10)

        assert [report.outcome for _, report in reports] == ["compressed"] * 4
        assert summarizer.peak == 2

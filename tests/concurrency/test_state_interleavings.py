"""The compressor state is never overwritten across a turn and a compaction by another path.

Each compaction path (background hygiene, the overnight job, the operator CLI in a second App on
the same database) is interleaved with a turn whose model call is in flight, in both orders.
After either, the session says exactly one compaction and carries the "-1" sentinel: the
turn's prompt count described the transcript before the compaction and must not replace it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from compactbot.bot.app import App
from compactbot.bot.compaction.report import CompactionReport
from compactbot.scheduler.job import run_overnight
from tests.compression.scripted import FakeClock
from tests.concurrency.rig import CHAT, GatedLLM, GatedSummarizer, chatter, running
from tests.harness import RecordingAdapter, group_message

HARD_LIMIT = 22  # the 22nd message fires hygiene in the hygiene interleaving
CHATTER = 20


async def start_compaction(
    path: str, app: App, clock: FakeClock, summarizer: GatedSummarizer
) -> asyncio.Task[object]:
    services = app.services
    session = await services.store.active_session(CHAT)
    if path == "hygiene":
        # The 22nd stored message reaches the hard limit: hygiene starts in the background.
        await chatter(app, RecordingAdapter(), 1, start=100)
        return asyncio.create_task(app.gateway.compactions.join())
    if path == "overnight":
        clock.advance(120)  # idle for longer than idle_minutes
        return asyncio.create_task(run_overnight(services, ignore_window=True, jitter=lambda: 0))
    assert path == "cli"

    async def cli() -> CompactionReport:
        # `compactbot compress` is another process: its own App and leases on the same file.
        async with App(app.config, llm=GatedLLM(), clock=clock, summarizer_factory=factory) as cli:
            settings = await cli.services.settings_for(CHAT)
            return await cli.services.compactor.compact(
                session.id,
                trigger="manual",
                settings=cli.services.compaction_settings(settings),
                system_prompt=await cli.services.system_prompt_for(CHAT),
                force=True,
            )

    factory = summarizer.factory
    return asyncio.create_task(cli())


@pytest.mark.parametrize("path", ["hygiene", "overnight", "cli"])
@pytest.mark.parametrize("order", ["compaction_commits_first", "turn_ends_first"])
async def test_state_is_never_overwritten_across_a_turn_and_a_compaction(
    tmp_path: Path, path: str, order: str
) -> None:
    clock = FakeClock()
    summarizer = GatedSummarizer()
    llm = GatedLLM(hold=True)
    sections = {"compression": {"hygiene_hard_message_limit": HARD_LIMIT}}
    async with running(
        tmp_path, llm=llm, summarizer=summarizer, clock=clock, sections=sections
    ) as app:
        adapter = RecordingAdapter()
        await chatter(app, adapter, CHATTER)
        store = app.services.store
        session = await store.active_session(CHAT)
        await app.gateway.handle(group_message("<<mq1>> @bot where did service 3 go?"), adapter)
        await llm.called.wait()  # the turn is inside its model call
        compaction = await start_compaction(path, app, clock, summarizer)
        await summarizer.started.wait()  # the summary is being written
        if order == "compaction_commits_first":
            summarizer.release.set()
            await compaction
            llm.release.set()
            await app.gateway.join()
        else:
            llm.release.set()
            _, reply = await adapter.queue.get()
            assert "mq1" in reply
            summarizer.release.set()
            await compaction
            await app.gateway.join()
        state = (await store.get_session(session.id)).compressor
        assert state.compression_count == 1
        assert state.last_prompt_tokens == -1
        events = await store.list_compression_events(chat_key=CHAT)
        assert [e.outcome for e in events if e.outcome in ("compressed", "fallback")] == [
            "compressed"
        ]


async def test_turn_prompt_tokens_after_the_compaction_are_recorded(tmp_path: Path) -> None:
    # The delta is refused only when it describes an older transcript, not always.
    clock = FakeClock()
    summarizer = GatedSummarizer()
    summarizer.release.set()
    llm = GatedLLM()
    async with running(tmp_path, llm=llm, summarizer=summarizer, clock=clock) as app:
        adapter = RecordingAdapter()
        await chatter(app, adapter, CHATTER)
        session = await app.services.store.active_session(CHAT)
        report = await app.services.compactor.compact(
            session.id,
            trigger="manual",
            settings=app.services.compaction_settings(await app.services.settings_for(CHAT)),
            system_prompt="system",
            force=True,
        )
        assert report.changed
        await app.gateway.handle(group_message("<<mq2>> @bot and now?"), adapter)
        await app.gateway.join()
        state = (await app.services.store.get_session(session.id)).compressor
        assert (state.compression_count, state.last_prompt_tokens) == (1, 1_234)

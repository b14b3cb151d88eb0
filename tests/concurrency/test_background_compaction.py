"""Compaction beside the chat: hygiene for every stored message, turns that wait only if they
must, and a hanging summary that never holds up the chat's other messages."""

from __future__ import annotations

import asyncio
from pathlib import Path

from compactbot.compression.tokens import counter_for
from tests.compression.scripted import FakeClock
from tests.concurrency.rig import CHAT, GatedLLM, GatedSummarizer, chatter, running
from tests.harness import RecordingAdapter, group_message

WINDOW = 8_000
AGENT_THRESHOLD_TOKENS = 6_800  # 85 % of the window: the 64K floor swallows 50 % here
HYGIENE = 0.6  # background hygiene starts at 4,800 tokens, before the turn's threshold
SMALL = {
    "model": {"context_length": WINDOW},
    "compression": {"hygiene_threshold": HYGIENE},
    "bounds": {"hygiene_threshold": [0.5, 0.95]},
}


# A model's summary stays short; the built-in extractive one grows with each merge.
SHORT_SUMMARY = "## Key facts\n- The team moved service deploys to new slots."


def prompt_tokens(messages: list[dict]) -> int:
    return counter_for(None).count_messages(messages)


async def test_turn_over_its_threshold_waits_for_the_compaction_in_flight(tmp_path: Path) -> None:
    summarizer = GatedSummarizer()
    llm = GatedLLM()
    sections = {
        **SMALL,
        "compression": {"hygiene_threshold": HYGIENE, "hygiene_max_wait_seconds": 30},
    }
    async with running(
        tmp_path, llm=llm, summarizer=summarizer, clock=FakeClock(), sections=sections
    ) as app:
        adapter = RecordingAdapter()
        await chatter(app, adapter, 45)
        assert summarizer.started.is_set()  # hygiene crossed 4,800 tokens and is summarising
        session = await app.services.store.get_session(
            (await app.services.store.active_session(CHAT)).id
        )
        assert session.active_tokens > AGENT_THRESHOLD_TOKENS
        await app.gateway.handle(group_message("<<mq>> @bot where is service 3?"), adapter)
        # The turn would exceed its threshold, so it does not call the model yet ...
        try:
            await asyncio.wait_for(llm.called.wait(), 0.3)
        except TimeoutError:
            pass
        assert not llm.called.is_set()
        summarizer.release.set()
        _, reply = await asyncio.wait_for(adapter.queue.get(), 10)
        await app.gateway.join()
        # ... and answers from the compacted transcript, without a second compaction.
        assert "mq" in reply
        assert prompt_tokens(llm.requests[0]) < AGENT_THRESHOLD_TOKENS
        events = await app.services.store.list_compression_events(chat_key=CHAT)
        assert [(e.trigger, e.outcome) for e in events] == [("hygiene", "compressed")]
        assert summarizer.calls == 1


async def test_turn_answers_within_its_budget_when_the_summary_hangs(tmp_path: Path) -> None:
    summarizer = GatedSummarizer()  # never released
    llm = GatedLLM()
    budget = 0.5
    sections = {
        **SMALL,
        "compression": {"hygiene_threshold": HYGIENE, "hygiene_max_wait_seconds": budget},
    }
    async with running(
        tmp_path, llm=llm, summarizer=summarizer, clock=FakeClock(), sections=sections
    ) as app:
        adapter = RecordingAdapter()
        await chatter(app, adapter, 45)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await app.gateway.handle(group_message("<<mq>> @bot where is service 3?"), adapter)
        _, reply = await asyncio.wait_for(adapter.queue.get(), 10)
        waited = loop.time() - started
        assert "mq" in reply
        assert budget <= waited < 4 * budget + 2
        assert prompt_tokens(llm.requests[0]) < WINDOW  # never more than the window
        assert summarizer.calls == 1  # the turn did not start a second compaction
        await app.gateway.close()


async def test_hanging_compress_never_blocks_the_chat_and_reports_at_commit(tmp_path: Path) -> None:
    summarizer = GatedSummarizer()
    llm = GatedLLM()
    async with running(tmp_path, llm=llm, summarizer=summarizer, clock=FakeClock()) as app:
        adapter = RecordingAdapter(admins={"alice"})
        await chatter(app, adapter, 20)
        await app.gateway.handle(group_message("/compress"), adapter)
        await summarizer.started.wait()
        # The chat keeps flowing: stored and answered from the current transcript.
        await app.gateway.handle(group_message("<<mx>> @bot still there?"), adapter)
        _, reply = await asyncio.wait_for(adapter.queue.get(), 10)
        assert "mx" in reply
        assert not any(text.startswith("🗜️") for text in adapter.texts())
        summarizer.release.set()
        _, report = await asyncio.wait_for(adapter.queue.get(), 10)
        assert report.startswith("🗜️ Compressed: 20 →")


async def test_unaddressed_chatter_stays_under_the_hygiene_threshold(tmp_path: Path) -> None:
    summarizer = GatedSummarizer(
        text="## Key facts\n- The team moved service deploys to new slots."
    )
    summarizer.release.set()
    async with running(
        tmp_path, llm=GatedLLM(), summarizer=summarizer, clock=FakeClock(), sections=SMALL
    ) as app:
        adapter = RecordingAdapter()
        store = app.services.store
        limit = int(WINDOW * HYGIENE)
        for i in range(300):
            await chatter(app, adapter, 1, start=i)
            await app.gateway.join()  # the background compaction this message started, if any
            session = await store.get_session((await store.active_session(CHAT)).id)
            assert session.active_tokens < limit, f"after message {i}"
        events = await store.list_compression_events(chat_key=CHAT)
        assert events and all(e.trigger == "hygiene" for e in events)
        assert adapter.sent == []  # nobody asked: routine compactions are silent

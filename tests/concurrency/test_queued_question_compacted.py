"""A question still queued when hygiene summarises it away is answered, not the newest message."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.compression.scripted import FakeClock
from tests.concurrency.rig import CHAT, GatedLLM, GatedSummarizer, chatter, running
from tests.harness import RecordingAdapter, group_message

SMALL = {
    "model": {"context_length": 8_000},
    "compression": {"hygiene_threshold": 0.6},
    "bounds": {"hygiene_threshold": [0.5, 0.95]},
}


async def test_a_question_compacted_while_queued_is_the_one_answered(tmp_path: Path) -> None:
    summarizer = GatedSummarizer(text="## Key facts\n- Deploys moved to new slots.")
    summarizer.release.set()
    llm = GatedLLM(hold=True)
    async with running(
        tmp_path, llm=llm, summarizer=summarizer, clock=FakeClock(), sections=SMALL
    ) as app:
        adapter = RecordingAdapter()
        await app.gateway.handle(group_message("<<mq1>> @bot first question"), adapter)
        await asyncio.wait_for(llm.called.wait(), 10)  # turn 1 holds the chat's lane
        await app.gateway.handle(group_message("<<mq2>> @bot which slot for service 3?"), adapter)
        store = app.services.store
        for batch in range(8):  # until hygiene has summarised the waiting question away
            await chatter(app, adapter, 20, start=20 * batch)
            await app.gateway.compactions.join()
            session = await store.active_session(CHAT)
            if not any("mq2" in row.text for row in await store.load_active(session.id)):
                break
        else:
            raise AssertionError("the queued question was never compacted")
        llm.release.set()
        await app.gateway.join()
        replies = [text for _, text in adapter.sent if text.startswith("reply for")]
        assert replies == ["reply for <<mq1>>", "reply for <<mq2>>"]
        events = await store.list_compression_events(chat_key=CHAT)
        assert ("hygiene", "compressed") in [(e.trigger, e.outcome) for e in events]

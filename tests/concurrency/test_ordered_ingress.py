"""One ordered ingress: nothing lost on redelivery, commands in arrival order, per chat."""

from __future__ import annotations

import asyncio
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.events import InboundMessage
from compactbot.bot.llm.offline_model import OfflineModel
from tests.compression.scripted import FakeClock
from tests.concurrency.ingest_driver import UPDATE_ID, redelivered
from tests.concurrency.rig import CHAT, GatedLLM, GatedSummarizer, running
from tests.harness import RecordingAdapter, group_message, make_config

REPO_ROOT = Path(__file__).resolve().parents[2]
READY_SECONDS = 60.0  # interpreter start and imports on a busy machine


async def test_sigkill_between_dedup_and_store_loses_nothing_on_redelivery(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.concurrency.ingest_driver",
        config.storage.database,
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), READY_SECONDS)
        assert line.strip() == b"deduped"
    finally:
        process.send_signal(signal.SIGKILL)
        await process.wait()
    async with App(config, llm=OfflineModel()) as app:
        store = app.services.store
        # The platform never got its acknowledgement, so it delivers the update again.
        await app.gateway.handle(redelivered(), RecordingAdapter())
        await app.gateway.handle(redelivered(), RecordingAdapter())  # and once more: a duplicate
        history = await store.load_history(CHAT)
        assert [m.content for m in history] == ["[Alice] <<m1>> the order id is 4411"]
        assert not await store.mark_update_processed("test", UPDATE_ID)


async def test_new_then_a_message_puts_the_message_in_the_new_session(tmp_path: Path) -> None:
    llm = GatedLLM()
    async with running(tmp_path, llm=llm, summarizer=GatedSummarizer(), clock=FakeClock()) as app:
        adapter = RecordingAdapter(admins={"alice"})
        store = app.services.store
        await app.gateway.handle(
            group_message("the project is called Nimbus", addressed=False), adapter
        )
        old = await store.active_session(CHAT)
        # Both arrive at once (two webhook connections): the chat's order is their arrival's.
        await asyncio.gather(
            app.gateway.handle(group_message("/new"), adapter),
            app.gateway.handle(group_message("<<mq>> @bot what is the project called?"), adapter),
        )
        await app.gateway.join()
        new = await store.active_session(CHAT)
        assert new.id != old.id
        rows = await store.load_active(new.id)
        assert rows[0].content == "[Alice] <<mq>> @bot what is the project called?"
        assert not any("Nimbus" in str(m.get("content")) for m in llm.requests[-1])
        assert adapter.texts()[0].startswith("🆕")


async def test_commands_and_messages_of_a_chat_keep_arrival_order(tmp_path: Path) -> None:
    llm = GatedLLM()
    async with running(tmp_path, llm=llm, summarizer=GatedSummarizer(), clock=FakeClock()) as app:
        adapter = RecordingAdapter(admins={"alice"})
        for text in ("<<m1>> @bot first", "/pin the id is 42", "<<m2>> @bot second"):
            await app.gateway.handle(group_message(text), adapter)
        await app.gateway.join()
        texts = adapter.texts()
        assert ["m1" in texts[0], texts[1].startswith("📌"), "m2" in texts[2]] == [True] * 3
        # The pin was stored between the two questions, as it was said.
        rows = await app.services.store.load_active(
            (await app.services.store.active_session(CHAT)).id
        )
        contents = [str(r.content) for r in rows]
        pin_at = contents.index("[Alice] /pin the id is 42")
        assert contents.index("[Alice] <<m1>> @bot first") < pin_at
        assert pin_at < contents.index("[Alice] <<m2>> @bot second")


@dataclass
class SlowAdminAdapter(RecordingAdapter):
    """The platform's admin lookup answers only when the test says so."""

    asked: asyncio.Event = field(default_factory=asyncio.Event)
    answer: asyncio.Event = field(default_factory=asyncio.Event)

    async def is_admin(self, message: InboundMessage) -> bool:
        self.asked.set()
        await self.answer.wait()
        return True


async def test_concurrent_callers_cannot_slip_a_message_before_a_commands_effect(
    tmp_path: Path,
) -> None:
    llm = GatedLLM()
    async with running(tmp_path, llm=llm, summarizer=GatedSummarizer(), clock=FakeClock()) as app:
        adapter = SlowAdminAdapter()
        store = app.services.store
        await app.gateway.handle(group_message("old talk", addressed=False), adapter)
        old = await store.active_session(CHAT)
        new_command = asyncio.create_task(app.gateway.handle(group_message("/new"), adapter))
        await adapter.asked.wait()  # /new is stored and waits for the admin check
        message = asyncio.create_task(
            app.gateway.handle(group_message("<<mq>> after the reset", addressed=False), adapter)
        )
        adapter.answer.set()
        await asyncio.gather(new_command, message)
        rows = await store.load_history(CHAT)
        (after,) = [r for r in rows if "after the reset" in str(r.content)]
        assert after.session_id != old.id

"""Small behaviours of the ingress and commands that people noticed in groups."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from compactbot.bot.events import ReplyTarget
from compactbot.bot.store.sqlite.store import SqliteStore
from tests.compression.scripted import FakeClock
from tests.concurrency.rig import CHAT, GatedLLM, GatedSummarizer, running
from tests.harness import RecordingAdapter, group_message

REPO_ROOT = Path(__file__).resolve().parents[2]


async def test_unknown_bare_command_in_a_group_is_ignored_and_not_stored(tmp_path: Path) -> None:
    async with running(
        tmp_path, llm=GatedLLM(), summarizer=GatedSummarizer(), clock=FakeClock()
    ) as app:
        adapter = RecordingAdapter()
        await app.gateway.handle(group_message("/weather berlin"), adapter)
        await app.gateway.join()
        assert adapter.sent == []
        assert await app.services.store.load_history(CHAT) == []


async def test_unknown_command_named_for_us_is_answered(tmp_path: Path) -> None:
    async with running(
        tmp_path, llm=GatedLLM(), summarizer=GatedSummarizer(), clock=FakeClock()
    ) as app:
        adapter = RecordingAdapter()
        await app.gateway.handle(group_message("/weather@compact_bot berlin"), adapter)
        await app.gateway.join()
        assert adapter.texts() == ["Unknown command /weather. Try /help."]


async def test_unpin_with_a_superscript_digit_answers_with_a_clear_error(tmp_path: Path) -> None:
    async with running(
        tmp_path, llm=GatedLLM(), summarizer=GatedSummarizer(), clock=FakeClock()
    ) as app:
        adapter = RecordingAdapter(admins={"alice"})
        await app.gateway.handle(group_message("/pin the id is 42"), adapter)
        await app.gateway.handle(group_message("/unpin ²"), adapter)
        await app.gateway.join()
        assert (
            adapter.texts()[-1] == "Usage: /unpin N, where N is a number from 1 to 1 (see /pins)."
        )
        assert len(await app.services.store.list_pins(CHAT)) == 1


async def test_chat_system_prompt_adds_to_the_operator_persona(tmp_path: Path) -> None:
    llm = GatedLLM()
    sections = {"gateway": {"persona": "You are Ops Helper. Never share passwords."}}
    async with running(
        tmp_path, llm=llm, summarizer=GatedSummarizer(), clock=FakeClock(), sections=sections
    ) as app:
        adapter = RecordingAdapter(admins={"alice"})
        await app.gateway.handle(
            group_message("/config system_prompt Answer like a pirate."), adapter
        )
        await app.gateway.handle(group_message("<<m1>> @bot hi"), adapter)
        await app.gateway.join()
        system = str(llm.requests[-1][0]["content"])
        assert "Never share passwords." in system and "Answer like a pirate." in system


@dataclass
class TypingAdapter(RecordingAdapter):
    typing_started: list[str | None] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    @contextlib.asynccontextmanager
    async def _typing(self, target: ReplyTarget) -> AsyncIterator[None]:
        self.typing_started.append(target.reply_to_message_id)
        self.started.set()
        yield

    def typing(self, target: ReplyTarget) -> contextlib.AbstractAsyncContextManager[None]:
        return self._typing(target)


async def test_typing_starts_as_soon_as_a_turn_is_queued(tmp_path: Path) -> None:
    llm = GatedLLM(hold=True)
    async with running(tmp_path, llm=llm, summarizer=GatedSummarizer(), clock=FakeClock()) as app:
        adapter = TypingAdapter()
        first = group_message("<<m1>> @bot first")
        second = group_message("<<m2>> @bot second")
        await app.gateway.handle(first, adapter)
        await llm.called.wait()  # the first turn holds the lane
        adapter.started.clear()
        await app.gateway.handle(second, adapter)
        await asyncio.wait_for(adapter.started.wait(), 5)
        # The second question still waits behind the first, and the chat already sees typing.
        assert len(llm.requests) == 1
        assert adapter.typing_started[-1] == second.platform_message_id
        llm.release.set()
        await app.gateway.join()


async def test_status_names_each_trigger_it_shows(tmp_path: Path) -> None:
    async with running(
        tmp_path, llm=GatedLLM(), summarizer=GatedSummarizer(), clock=FakeClock()
    ) as app:
        adapter = RecordingAdapter()
        await app.gateway.handle(group_message("/status"), adapter)
        await app.gateway.join()
        (status,) = adapter.texts()
        assert "Compaction before a reply at" in status and "(threshold 50%)" in status
        assert "background hygiene at 85,000 (hygiene_threshold 85%)" in status


async def test_history_piped_into_head_ends_without_a_broken_pipe(tmp_path: Path) -> None:
    db = tmp_path / "compactbot.db"
    async with SqliteStore(db) as store:
        from tests.store.factories import user

        session = await store.active_session(CHAT)
        await store.append_messages(
            session.id, [user(f"line {i} " + "x" * 120) for i in range(3000)]
        )
    env = {**os.environ, "COMPACTBOT_DB": str(db), "PYTHONPATH": str(REPO_ROOT)}
    env.pop("COMPACTBOT_CONFIG", None)
    done = await asyncio.to_thread(
        subprocess.run,
        f"{sys.executable} -m compactbot.bot history {CHAT} | head -n 1",
        shell=True,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "line 0" in done.stdout
    assert "BrokenPipeError" not in done.stderr and "Traceback" not in done.stderr

"""Edits through the real ingress never starve a compaction (SPEC 17), and none is lost."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.compaction.session_compactor import SessionCompactor, UsageSink
from compactbot.bot.ingress.message_changes import apply_edit
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.compression import Summarizer, SummaryRequest
from tests.compression.scripted import FakeClock
from tests.harness import RecordingAdapter, group_message, make_config

CHAT = "test:g1"
FILLER = "we went over the release notes, the office move and the lunch rota again"


class _EditEverySecond:
    """Each summary call takes a second, in which Bob edits his live message once more."""

    def __init__(self, app: App, clock: FakeClock) -> None:
        self.app, self.clock = app, clock
        self.message = group_message("draft 0", author="Bob", addressed=False)
        self.edits = 0

    async def summarize(self, request: SummaryRequest) -> str:
        self.edits += 1
        self.clock.advance(1.0)
        edit = replace(self.message, text=f"draft {self.edits}", update_id=f"e{self.edits}")
        assert await apply_edit(self.app.services, edit)
        return "NOTE | - | - | chatter about the office move"

    def factory(self, _usage: UsageSink) -> Summarizer:
        return self


async def test_compactions_commit_while_a_member_edits_a_live_message_every_second(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path, {"COMPACTBOT_CONTEXT_LENGTH": "32000"})
    async with App(config, llm=OfflineModel()) as app:
        clock = FakeClock()
        editor = _EditEverySecond(app, clock)
        services = app.services
        compactor = SessionCompactor(services.store, services.counter, editor.factory, clock=clock)
        adapter = RecordingAdapter()
        await app.gateway.handle(editor.message, adapter)
        outcomes = []
        for batch in range(4):
            for i in range(100):
                text = f"chat {batch}.{i}: " + FILLER * 5
                await app.gateway.handle(group_message(text, addressed=False), adapter)
            await app.gateway.join()
            session = await services.store.active_session(CHAT)
            report = await compactor.compact(
                session.id,
                trigger="manual",
                settings=services.compaction_settings(await services.settings_for(CHAT)),
                system_prompt=await services.system_prompt_for(CHAT),
            )
            outcomes.append(report.outcome)
        assert outcomes == ["compressed"] * 4
        assert editor.edits == 4
        platform_id = editor.message.platform_message_id
        assert platform_id is not None
        stored = await services.store.find_platform_message(CHAT, platform_id)
        assert stored is not None and stored.text.endswith("draft 4")
        revisions = await services.store.message_revisions(stored.id)
        assert revisions and revisions[-1].endswith("draft 3")


class _ForgetDuringTheSummary:
    """A member's message is forgotten while the summary is being written: the commit is
    fenced out, and the call it paid for is still on record."""

    def __init__(self, app: App, platform_id: str) -> None:
        self.app, self.platform_id = app, platform_id
        self.usage: UsageSink | None = None

    async def summarize(self, request: SummaryRequest) -> str:
        assert self.usage is not None
        self.usage("summary-model", 900, 100)
        assert await self.app.services.store.forget_messages(CHAT, [self.platform_id])
        return "NOTE | - | - | chatter about the office move"

    def factory(self, usage: UsageSink) -> Summarizer:
        self.usage = usage
        return self


async def test_a_fenced_out_compaction_records_the_summary_calls_it_paid_for(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path, {"COMPACTBOT_CONTEXT_LENGTH": "32000"})
    async with App(config, llm=OfflineModel()) as app:
        services = app.services
        adapter = RecordingAdapter()
        doomed = group_message("my address is 12 Elm Street", author="Dave", addressed=False)
        await app.gateway.handle(doomed, adapter)
        for i in range(100):
            text = f"chat {i}: " + FILLER * 5
            await app.gateway.handle(group_message(text, addressed=False), adapter)
        await app.gateway.join()
        assert doomed.platform_message_id is not None
        forgetter = _ForgetDuringTheSummary(app, doomed.platform_message_id)
        compactor = SessionCompactor(services.store, services.counter, forgetter.factory)
        session = await services.store.active_session(CHAT)
        report = await compactor.compact(
            session.id,
            trigger="manual",
            settings=services.compaction_settings(await services.settings_for(CHAT)),
            system_prompt=await services.system_prompt_for(CHAT),
        )
        assert report.outcome == "conflict"
        [event] = await services.store.list_compression_events(chat_key=CHAT, limit=1)
        assert (event.outcome, event.summary_calls, event.summary_cost_tokens) == (
            "conflict",
            1,
            1_000,
        )

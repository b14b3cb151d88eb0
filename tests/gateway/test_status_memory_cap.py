"""/status says when the must-show memory outgrows the summary's cap (SPEC 6.11, issue 37)."""

from __future__ import annotations

from pathlib import Path

from compactbot.bot.app import App
from tests.compression.scripted import FakeClock
from tests.concurrency.rig import CHAT, GatedLLM, GatedSummarizer, running
from tests.harness import RecordingAdapter, group_message

OVER_CAP = "over the summary's cap of 10,000"


async def _status(app: App, adapter: RecordingAdapter) -> str:
    await app.gateway.handle(group_message("/status"), adapter)
    await app.gateway.join()
    return adapter.texts()[-1]


async def test_status_says_when_pins_and_rules_outgrow_the_memory_cap(tmp_path: Path) -> None:
    async with running(
        tmp_path, llm=GatedLLM(), summarizer=GatedSummarizer(), clock=FakeClock()
    ) as app:
        adapter = RecordingAdapter()
        assert OVER_CAP not in await _status(app, adapter)
        for i in range(400):
            text = f"Rule {i}: never ship crate {i} before the signed customs form reaches Grace, "
            text += "and always copy the warehouse lead on the confirmation mail."
            await app.services.store.add_pin(CHAT, text, "alice")
        assert OVER_CAP in await _status(app, adapter)


async def test_the_memory_cap_is_an_operator_setting(tmp_path: Path) -> None:
    sections = {"compression": {"memory_cap_ratio": 0.05}}
    async with running(
        tmp_path,
        llm=GatedLLM(),
        summarizer=GatedSummarizer(),
        clock=FakeClock(),
        sections=sections,
    ) as app:
        settings = app.services.compaction_settings(await app.services.settings_for(CHAT))
        assert settings.memory_cap_tokens == 5_000
        for i in range(400):
            await app.services.store.add_pin(CHAT, f"Rule {i}: the crate {i} waits for Grace.", "a")
        assert "over the summary's cap of 5,000" in await _status(app, RecordingAdapter())

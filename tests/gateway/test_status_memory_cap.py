"""/status says when the must-show memory outgrows the summary's cap (SPEC 6.11, issue 37)."""

from __future__ import annotations

from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.compaction.memory_cap import memory_over_cap
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


async def test_rules_kept_by_a_compaction_are_measured_then_and_pins_counted_live(
    tmp_path: Path,
) -> None:
    # An 8K window: the cap is the summary's 2,000-token floor, which 150 rules outgrow.
    sections = {"model": {"context_length": 8_000}, "compression": {"memory_cap_ratio": 0.1}}
    summarizer = GatedSummarizer()
    summarizer.release.set()
    async with running(
        tmp_path, llm=GatedLLM(), summarizer=summarizer, clock=FakeClock(), sections=sections
    ) as app:
        adapter = RecordingAdapter(admins={"alice"})
        for i in range(150):
            rule = f"Never ship crate {i} before the signed customs form for it reaches Grace."
            await app.gateway.handle(group_message(rule, addressed=False), adapter)
        for i in range(50):
            chatter = f"Lunch talk {i}: the canteen had soup again, the queue went out the door "
            chatter += "past the noticeboard where somebody pinned a poster about the summer party."
            await app.gateway.handle(group_message(chatter, addressed=False), adapter)
        await app.gateway.handle(group_message("/compress"), adapter)
        await app.gateway.join()
        store = app.services.store
        session = await store.active_session(CHAT)
        # Measured by the compaction that kept the rules, and kept with the compressor state.
        settings = await app.services.settings_for(CHAT)
        assert app.services.compaction_settings(settings).memory_cap_tokens == 2_000
        assert session.compressor.memory_need_tokens > 2_000
        assert "over the summary's cap of 2,000" in await _status(app, adapter)
        measured = await memory_over_cap(app.services, settings, session)
        assert measured is not None
        await store.add_pin(CHAT, "The customs broker is Hallam & Sons, 14 Dock Road.", "alice")
        pinned = await memory_over_cap(app.services, settings, session)
        assert pinned is not None and pinned.need > measured.need

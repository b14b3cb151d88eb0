"""Every model call is bounded (SPEC 17), counted where it would land: at the fake model server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.events import Attachment, InboundMessage
from compactbot.bot.settings.config import Config
from compactbot.bot.settings.loading import load_config
from compactbot.scheduler.overnight import run_overnight
from tests.fakes.openai_server import FakeOpenAI, Reply, Responder, default_responder
from tests.gateway.test_pipeline_e2e import summarizing_responder
from tests.harness import RecordingAdapter, endpoint_env, group_message
from tests.scheduler.builders import FakeClock, fill_session

CHAT = "test:g1"
NIGHT = datetime(2026, 6, 1, 3, 0, tzinfo=UTC)  # inside the default overnight window
DAY = NIGHT.date().isoformat()
PHOTO = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
RESETS = "It resets at 00:00 UTC, in 21 h 0 min."
SPENT = "This chat has used its token budget for today."


class PhotoAdapter(RecordingAdapter):
    """A platform whose files can be downloaded."""

    async def download(self, attachment: Attachment, max_bytes: int) -> bytes:
        return PHOTO


@contextlib.asynccontextmanager
async def budget_app(
    tmp_path: Path, clock: FakeClock, *, responder: Responder = default_responder, yaml: str = ""
) -> AsyncIterator[tuple[FakeOpenAI, App]]:
    """A fake model server and an app talking to it, with vision on and `yaml` added."""
    async with (
        FakeOpenAI(responder) as fake,
        App(config_for(tmp_path, fake.base_url, yaml), clock=clock) as app,
    ):
        yield fake, app


def config_for(tmp_path: Path, base_url: str, yaml: str = "") -> Config:
    path = tmp_path / "config.yaml"
    path.write_text("model:\n  vision: true\n" + yaml)
    env = {**endpoint_env(base_url), "COMPACTBOT_DB": str(tmp_path / "compactbot.db")}
    return load_config(env, path=path)


def photo_message(text: str) -> InboundMessage:
    photo = Attachment("image", "photo-1", "shot.png", "image/png", len(PHOTO))
    return replace(group_message(text, author="Bob", addressed=False), attachments=(photo,))


async def compacted(app: App, trigger: str) -> list[str]:
    events = await app.services.store.list_compression_events(chat_key=CHAT)
    return [e.outcome for e in events if e.trigger == trigger]


async def test_spent_budget_stops_every_model_call_of_the_chat(tmp_path: Path) -> None:
    clock = FakeClock.at(NIGHT)
    async with budget_app(tmp_path, clock, responder=summarizing_responder()) as (fake, app):
        services, store = app.services, app.services.store
        adapter = PhotoAdapter(admins={"alice"})
        session_id = await fill_session(services, CHAT, messages=70)
        await store.set_chat_setting(CHAT, "daily_token_budget", "1000")
        await store.add_usage(CHAT, "carol", "reply", 900, 100, day=DAY)  # reported spent

        await app.gateway.handle(group_message("@bot are you there?"), adapter)  # a reply
        await app.gateway.handle(photo_message("look at this"), adapter)  # vision
        await app.gateway.handle(group_message("/summary", author="Dave"), adapter)
        await app.gateway.handle(group_message("/compress"), adapter)
        await app.gateway.join()
        await fill_session(services, CHAT, messages=70)
        clock.advance(3_700)  # the chat has been idle long enough for the overnight job
        assert [r.outcome for _, r in await run_overnight(services, jitter=lambda: 0.0)]
        await fill_session(services, CHAT, messages=70)
        settings = await services.settings_for(CHAT)
        report = await services.compactor.compact(
            session_id,
            trigger="overflow",
            settings=services.compaction_settings(settings),
            system_prompt=await services.system_prompt_for(CHAT),
            force=True,
        )
        await fill_session(services, CHAT, messages=70)
        await store.set_chat_setting(CHAT, "hygiene_hard_message_limit", "10")
        await app.gateway.handle(group_message("chatter", addressed=False), adapter)
        await asyncio.wait_for(app.gateway.join(), 10)

        assert fake.completions == []
        texts = adapter.texts()
        assert f"{SPENT}\n{RESETS}" in texts  # said once, with when it resets
        assert any(t.startswith("🧾 What you missed") for t in texts)
        assert report.outcome == "compressed"  # folded by the offline extractor
        for trigger in ("manual", "overnight", "hygiene"):
            assert await compacted(app, trigger) == ["compressed"], trigger
        events = await store.list_compression_events(chat_key=CHAT)
        assert all(e.summary_calls == 0 and e.summary_cost_tokens == 0 for e in events)
        history = [r.text for r in await store.load_history(CHAT, include_archived=True)]
        assert "[Bob] look at this\n[image: shot.png]" in history  # read, not described


async def test_budget_spent_by_a_tool_round_stops_the_next_round(tmp_path: Path) -> None:
    clock = FakeClock.at(NIGHT)
    async with budget_app(tmp_path, clock, responder=summarizing_responder()) as (fake, app):
        await app.services.store.set_chat_setting(CHAT, "daily_token_budget", "1000")
        fake.script(
            Reply(
                None,
                prompt_tokens=1_500,
                completion_tokens=10,
                tool_calls=[{"name": "search_history", "arguments": {"query": "lunch"}}],
            )
        )
        adapter = RecordingAdapter()
        await app.gateway.handle(group_message("@bot where did we have lunch?"), adapter)
        await app.gateway.join()

        assert len(fake.completions) == 1
        assert adapter.texts() == [f"{SPENT}\n{RESETS}"]
        [row] = await app.services.store.usage(CHAT, DAY)
        assert (row.user_id, row.calls, row.prompt_tokens) == ("alice", 1, 1_500)


async def test_forty_private_messages_in_a_minute_reach_the_model_at_most_the_member_limit(
    tmp_path: Path,
) -> None:
    clock = FakeClock.at(NIGHT)
    async with budget_app(tmp_path, clock) as (fake, app):
        limit = app.config.gateway.user_rate_limit_per_minute
        adapter = RecordingAdapter()
        for i in range(40):
            message = group_message(f"question {i}", chat_id="dm-alice", is_group=False)
            await app.gateway.handle(message, adapter)
            clock.advance(1.0)
        await app.gateway.join()

        assert 0 < limit < 40 and len(fake.completions) == limit
        told = [t for t in adapter.texts() if "faster than I can answer" in t]
        assert told == [
            "Alice, you're sending messages faster than I can answer; please slow down a "
            "little.\nYou can ask again within a minute."
        ]


async def test_a_new_topic_does_not_reset_its_parent_chats_budget(tmp_path: Path) -> None:
    clock = FakeClock.at(NIGHT)
    async with budget_app(tmp_path, clock) as (fake, app):
        await app.services.store.set_chat_setting(CHAT, "daily_token_budget", "1000")
        fake.script(Reply("answered in topic 7", prompt_tokens=1_500))
        adapter = RecordingAdapter()
        for where in ("7", "8", None):
            ask = group_message("@bot what's new?", author="Bob", thread_id=where)
            await app.gateway.handle(ask, adapter)
            await app.gateway.join()

        assert len(fake.completions) == 1
        assert adapter.texts()[0] == "answered in topic 7"
        assert adapter.texts()[1:] == [f"{SPENT}\n{RESETS}"]  # told once, for the chat


async def test_global_budget_stops_every_chat_and_member_budget_one_member(
    tmp_path: Path,
) -> None:
    clock = FakeClock.at(NIGHT)
    limits = "gateway:\n  member_daily_token_budget: 500\n  global_daily_token_budget: 1000\n"
    async with budget_app(tmp_path, clock, yaml=limits) as (fake, app):
        store, adapter = app.services.store, RecordingAdapter()
        await store.upsert_chat("test:busy", "test")
        await store.add_usage("test:busy", "carol", "reply", 400, 100, day=DAY)
        await app.gateway.handle(group_message("@bot hi", author="Carol", chat_id="busy"), adapter)
        await app.gateway.handle(group_message("@bot hi", author="Dave", chat_id="busy"), adapter)
        await app.gateway.join()
        assert len(fake.completions) == 1  # Carol spent her part; Dave is answered
        assert adapter.texts()[0] == (
            "You have used your token budget in this chat for today.\n" + RESETS
        )

        await store.add_usage("test:busy", "dave", "reply", 1_000, 0, day=DAY)
        for chat in ("g1", "g2", "dm-erin"):
            ask = group_message("@bot hi", author="Erin", chat_id=chat, is_group=chat != "dm-erin")
            await app.gateway.handle(ask, adapter)
        await app.gateway.join()

        assert len(fake.completions) == 1
        everyone = "I have used my token budget for all chats for today.\n" + RESETS
        assert adapter.texts()[-3:] == [everyone] * 3
        metrics = app.metrics.render().decode()
        assert 'compactbot_limit_refusals_total{limit="global_budget"} 3.0' in metrics
        assert 'compactbot_limit_refusals_total{limit="member_budget"} 1.0' in metrics


async def test_a_compaction_the_budget_cannot_afford_is_folded_without_the_model(
    tmp_path: Path,
) -> None:
    clock = FakeClock.at(NIGHT)
    async with budget_app(tmp_path, clock, responder=summarizing_responder()) as (fake, app):
        services, store = app.services, app.services.store
        adapter = RecordingAdapter(admins={"alice"})
        await fill_session(services, CHAT, messages=70)  # some 6,500 tokens to summarise
        await store.set_chat_setting(CHAT, "daily_token_budget", "5000")
        await app.gateway.handle(group_message("/compress"), adapter)
        await app.gateway.join()
        assert fake.completions == []

        await store.set_chat_setting(CHAT, "daily_token_budget", "1000000")
        await fill_session(services, CHAT, messages=70)
        await app.gateway.handle(group_message("/compress"), adapter)
        await app.gateway.join()

        calls = len(fake.completions)
        cheap, paid = reversed(await store.list_compression_events(chat_key=CHAT))
        assert (cheap.outcome, cheap.summary_calls, cheap.summary_cost_tokens) == (
            "compressed",
            0,
            0,
        )
        assert paid.outcome == "compressed" and paid.summary_calls == calls > 0
        [row] = await store.usage(CHAT, DAY)
        assert row.purpose == "compression" and row.calls == calls
        assert paid.summary_cost_tokens == row.prompt_tokens + row.completion_tokens

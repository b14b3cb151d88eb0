"""A model that hangs for two minutes: the chat hears within the deadline, every question gets
an answer or a notice, and nothing is retried into the hang."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from compactbot.bot.turns.failure_notices import REPEAT_NOTICE
from tests.fakes.openai_server import FakeOpenAI, Hang
from tests.harness import RecordingAdapter, endpoint_env, group_message, running_app
from tests.reliability.rig import yaml_config

DEADLINE_SECONDS = 1.0
# Scheduling slack on a busy 2-core machine between the deadline firing and the send.
SLACK_SECONDS = 0.75
HANG_SECONDS = 120.0
QUEUED_QUESTIONS = 4


async def test_two_minute_model_hang_notices_within_the_deadline_and_answers_every_question(
    tmp_path: Path,
) -> None:
    sections = {
        "model": {
            "reply_deadline_seconds": DEADLINE_SECONDS,
            "request_timeout_seconds": HANG_SECONDS,
            "max_retries": 3,
        }
    }
    async with FakeOpenAI() as fake:
        fake.script(*[Hang(HANG_SECONDS)] * QUEUED_QUESTIONS)
        config = yaml_config(tmp_path, sections, endpoint_env(fake.base_url, context_length=32_000))
        async with running_app(config) as app:
            adapter = RecordingAdapter()
            started = time.monotonic()
            for i in range(QUEUED_QUESTIONS):
                await app.gateway.handle(group_message(f"@bot question {i}"), adapter)
            _, first = await asyncio.wait_for(adapter.queue.get(), HANG_SECONDS)
            first_after = time.monotonic() - started
            await app.gateway.join()
            # The model is back: the next question is answered as usual.
            await app.gateway.handle(group_message("@bot are you back?"), adapter)
            await app.gateway.join()

    texts = adapter.texts()
    assert first_after < DEADLINE_SECONDS + SLACK_SECONDS, first_after
    assert "Your message is saved" in first
    assert texts[:QUEUED_QUESTIONS] == [first] + [REPEAT_NOTICE] * (QUEUED_QUESTIONS - 1)
    assert len(texts) == QUEUED_QUESTIONS + 1 and texts[-1].startswith("fake reply")
    # One request per question: a hang is never retried, whatever max_retries says.
    assert len(fake.completions) == QUEUED_QUESTIONS + 1


async def test_hanging_summary_model_fails_within_its_timeout_with_one_request(
    tmp_path: Path,
) -> None:
    sections = {"model": {"summary_timeout_seconds": DEADLINE_SECONDS}}
    async with FakeOpenAI() as fake:
        config = yaml_config(tmp_path, sections, endpoint_env(fake.base_url, context_length=32_000))
        async with running_app(config) as app:
            adapter = RecordingAdapter()
            for i in range(30):
                await app.gateway.handle(
                    group_message(f"note {i} about the release", addressed=False), adapter
                )
            services = app.services
            session = await services.store.active_session("test:g1")
            settings = await services.settings_for("test:g1")
            fake.script(Hang(HANG_SECONDS))
            started = time.monotonic()
            report = await services.compactor.compact(
                session.id,
                trigger="manual",
                settings=services.compaction_settings(settings),
                system_prompt=await services.system_prompt_for("test:g1"),
                force=True,
            )
            elapsed = time.monotonic() - started
            rows = await services.store.load_history("test:g1")

    assert elapsed < DEADLINE_SECONDS + SLACK_SECONDS, elapsed
    assert len(fake.completions) == 1  # the hang was not retried
    # The compaction fell back or gave up; either way every message is still there.
    assert report.outcome in ("fallback", "aborted", "error"), report.outcome
    assert sum(1 for r in rows if r.role == "user") == 30


class BrokenModel:
    """A model client that fails in a way no error class foresaw."""

    model = "broken"
    offline = False

    async def complete(self, messages: object, **kwargs: object) -> object:
        raise RuntimeError("unforeseen")


async def test_a_turn_that_breaks_unexpectedly_still_gets_a_notice(tmp_path: Path) -> None:
    config = yaml_config(tmp_path, {})
    async with running_app(config, llm=BrokenModel()) as app:  # type: ignore[arg-type]
        adapter = RecordingAdapter()
        for i in range(2):
            await app.gateway.handle(group_message(f"@bot question {i}"), adapter)
        await app.gateway.join()

    texts = adapter.texts()
    assert len(texts) == 2 and "Your message is saved" in texts[0]
    assert texts[1] == REPEAT_NOTICE

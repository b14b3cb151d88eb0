"""Breaker pauses, summary cooldowns and opt-in chat labels, through the real pipeline."""

from __future__ import annotations

from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.turns.runner import BREAKER_NOTICE
from tests.fakes.openai_server import Error, FakeOpenAI, Reply
from tests.harness import RecordingAdapter, endpoint_env, group_message, make_config

CHAT = "test:g1"
WINDOW = 200_000
# Over the 50 % compaction threshold (100,000) but under hygiene's 85 % (170,000).
INEFFECTIVE_PROMPT_TOKENS = 120_000


def sample(app: App, name: str, **labels: str) -> float:
    return app.metrics.registry.get_sample_value(name, labels or None) or 0.0


async def chatter(app: App, adapter: RecordingAdapter, count: int, start: int = 0) -> None:
    for n in range(start, start + count):
        text = f"note {n}: " + "we discussed the rollout and its many steps " * 30
        await app.gateway.handle(group_message(text, author="Bob", addressed=False), adapter)


async def compress(app: App, adapter: RecordingAdapter) -> None:
    await app.gateway.handle(group_message("/compress"), adapter)
    await app.gateway.join()


async def ask(app: App, adapter: RecordingAdapter, llm: FakeOpenAI, text: str) -> None:
    llm.script(Reply("noted", prompt_tokens=INEFFECTIVE_PROMPT_TOKENS))
    await app.gateway.handle(group_message(f"@bot {text}"), adapter)
    await app.gateway.join()


async def test_breaker_pause_is_counted_once_when_two_compactions_do_not_help(
    tmp_path: Path,
) -> None:
    async with FakeOpenAI() as llm:
        config = make_config(tmp_path, endpoint_env(llm.base_url, context_length=WINDOW))
        async with App(config) as app:
            adapter = RecordingAdapter(admins={"alice"})
            await chatter(app, adapter, 120)
            await compress(app, adapter)
            await ask(app, adapter, llm, "first question")
            assert sample(app, "compactbot_breaker_pauses_total") == 0
            await chatter(app, adapter, 120, start=120)
            await compress(app, adapter)
            await ask(app, adapter, llm, "second question")
            assert BREAKER_NOTICE in adapter.texts()
            assert sample(app, "compactbot_breaker_pauses_total") == 1


async def test_summary_failure_cooldown_is_counted(tmp_path: Path) -> None:
    async with FakeOpenAI() as llm:
        # A window the chatter stays far under, so no hygiene compaction runs before /compress.
        config = make_config(tmp_path, endpoint_env(llm.base_url, context_length=64_000))
        async with App(config) as app:
            adapter = RecordingAdapter(admins={"alice"})
            await chatter(app, adapter, 30)
            llm.script(Error.unauthorized(), Error.unauthorized())
            await compress(app, adapter)
            (event,) = await app.services.store.list_compression_events(chat_key=CHAT)
            assert event.outcome == "aborted"
            assert sample(app, "compactbot_summary_cooldowns_total") == 1
            assert sample(app, "compactbot_compactions_total", trigger="manual", outcome="aborted")
            assert sample(
                app, "compactbot_llm_request_seconds_count", purpose="summary", outcome="error"
            )


async def test_chat_labels_appear_only_when_the_operator_enables_them(tmp_path: Path) -> None:
    for enabled in ("false", "true"):
        config = make_config(tmp_path / enabled, {"COMPACTBOT_METRICS_CHAT_LABELS": enabled})
        async with App(config) as app:
            await app.gateway.handle(group_message("hello", addressed=False), RecordingAdapter())
            text = app.metrics.render().decode()
            assert sample(app, "compactbot_messages_received_total", platform="test") == 1
            assert (f'chat="{CHAT}"' in text) is (enabled == "true")

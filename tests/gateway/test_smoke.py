from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.harness import RecordingAdapter, endpoint_env, group_message, make_config, running_app


async def test_addressed_message_is_answered_through_fake_endpoint(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        fake.script(Reply("Hello Alice!"))
        config = make_config(tmp_path, endpoint_env(fake.base_url))
        async with running_app(config) as app:
            adapter = RecordingAdapter()
            await app.gateway.handle(group_message("hi @bot"), adapter)
            await app.gateway.join()
            assert adapter.texts() == ["Hello Alice!"]
            body = fake.completions[-1]
            assert body["messages"][-1]["content"] == "[Alice] hi @bot"


async def test_small_summary_model_lowers_the_threshold_once(tmp_path: Path, caplog) -> None:
    async with FakeOpenAI(models=("big-model", "small-summarizer"), context_length=32_000) as fake:
        env = endpoint_env(fake.base_url, context_length=200_000, model="big-model")
        env["COMPACTBOT_SUMMARY_MODEL"] = "small-summarizer"
        config = make_config(tmp_path, env)
        async with running_app(config) as app:
            settings = app.services.compaction_settings(await app.services.settings_for("t:1"))
            assert settings.threshold_tokens == 32_000
        assert sum("summary model's window" in r.message for r in caplog.records) == 1

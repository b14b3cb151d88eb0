"""/config model: a chat picks a model from the operator's allow-list; its window follows."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.openai_server import FakeOpenAI
from tests.harness import RecordingAdapter, endpoint_env, group_message, make_config, running_app

CHAT = "test:g1"


async def test_config_model_switches_the_model_and_the_window(tmp_path: Path) -> None:
    yaml = tmp_path / "config.yaml"
    yaml.write_text(
        "model:\n  allowed_models: [big-model]\n  context_lengths: {big-model: 200000}\n"
    )
    adapter = RecordingAdapter(admins={"alice"})
    async with FakeOpenAI(models=("fake-model", "big-model")) as llm:
        env = {**endpoint_env(llm.base_url, context_length=8_000), "COMPACTBOT_CONFIG": str(yaml)}
        async with running_app(make_config(tmp_path, env)) as app:
            gateway = app.gateway

            async def say(text: str) -> str:
                await gateway.handle(group_message(text), adapter)
                await gateway.join()
                return adapter.texts()[-1]

            assert "Tokens: 0 / 8,000" in await say("/status")
            refused = await say("/config model gpt-unknown")
            assert "not valid" in refused and "fake-model | big-model" in refused
            assert (await say("/config model big-model")).startswith("✅ model = big-model")
            status = await say("/status")
            assert "Tokens: 0 / 200,000" in status
            assert "Compaction before a reply at 100,000 (threshold 50%)" in status
            await say("hello there")
            assert llm.completions[-1]["model"] == "big-model"
            settings = await app.services.settings_for(CHAT)
            assert app.services.compaction_settings(settings).context_length == 200_000

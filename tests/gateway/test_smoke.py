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
            await app.gateway.lanes.join()
            assert adapter.texts() == ["Hello Alice!"]
            body = fake.completions[-1]
            assert body["messages"][-1]["content"] == "[Alice] hi @bot"

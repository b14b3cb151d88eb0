"""The streaming client against FakeOpenAI's SSE: text as it grows, usage, tool calls, retries."""

from __future__ import annotations

from types import SimpleNamespace

from compactbot.bot.llm.stream import StreamAccumulator, StreamingChatClient
from tests.fakes.openai_server import Error, FakeOpenAI, Reply


def _client(fake: FakeOpenAI) -> StreamingChatClient:
    return StreamingChatClient(
        api_key="sk-test", base_url=fake.base_url, model="fake-model", retry_base_seconds=0.01
    )


async def test_stream_delivers_growing_text_and_the_usage() -> None:
    async with FakeOpenAI() as fake:
        fake.script(Reply("one two three four", chunk_chars=4, prompt_tokens=321))
        client = _client(fake)
        seen: list[str] = []

        async def sink(text: str) -> None:
            seen.append(text)

        response = await client.stream([{"role": "user", "content": "hi"}], on_text=sink)
        await client.aclose()
    assert seen == ["one ", "one two ", "one two thre", "one two three fo", "one two three four"]
    assert response.content == "one two three four"
    assert response.prompt_tokens == 321
    assert fake.completions[0]["stream_options"] == {"include_usage": True}


async def test_rate_limit_before_any_text_is_retried() -> None:
    async with FakeOpenAI() as fake:
        fake.script(Error.rate_limited(10), Reply("fine"))
        client = _client(fake)

        async def sink(text: str) -> None:
            return None

        response = await client.stream([{"role": "user", "content": "hi"}], on_text=sink)
        await client.aclose()
    assert response.content == "fine"
    assert len(fake.completions) == 2


async def test_streamed_tool_call_is_reassembled() -> None:
    async with FakeOpenAI() as fake:
        call = {"name": "search_history", "arguments": {"query": "budget"}}
        fake.script(Reply(None, tool_calls=[call]))
        client = _client(fake)

        async def sink(text: str) -> None:
            raise AssertionError("a tool call shows no text")

        response = await client.stream([{"role": "user", "content": "hi"}], on_text=sink)
        await client.aclose()
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("search_history", '{"query": "budget"}')
    ]


def test_tool_call_arguments_split_across_chunks_are_joined() -> None:
    def chunk(**delta: object) -> SimpleNamespace:
        return SimpleNamespace(
            usage=None, model="m", choices=[SimpleNamespace(delta=SimpleNamespace(**delta))]
        )

    def call(index: int, **fields: object) -> SimpleNamespace:
        function = SimpleNamespace(name=fields.get("name"), arguments=fields.get("arguments"))
        return SimpleNamespace(index=index, id=fields.get("id"), function=function)

    acc = StreamAccumulator("m")
    acc.add(chunk(content=None, tool_calls=[call(0, id="c1", name="remember", arguments='{"fa')]))
    acc.add(chunk(content=None, tool_calls=[call(0, arguments='ct": "x"}')]))
    acc.add(chunk(content=None, tool_calls=[call(1, id="c2", name="chat_stats", arguments="{}")]))
    calls = acc.response().tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("c1", "remember", '{"fact": "x"}'),
        ("c2", "chat_stats", "{}"),
    ]

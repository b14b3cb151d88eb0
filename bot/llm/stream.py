"""Streamed chat completions: text deltas to a sink as they arrive, one LLMResponse at the end."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from compactbot.bot.llm.client import LLMClient, LLMResponse, OpenAIChatClient, ToolCall
from compactbot.bot.llm.errors import LLMError, LLMTransientError

log = logging.getLogger(__name__)

# Appended to what arrived when a stream breaks after members already saw part of the answer.
STREAM_BROKEN_NOTICE = "⚠️ The answer was cut off: the connection to the model broke."

# Called with the whole text so far (not the delta), so a sink may drop frames freely.
TextSink = Callable[[str], Awaitable[None]]


@runtime_checkable
class StreamingLLM(Protocol):
    """An LLM client that can also stream; `StreamingChatClient` below is one."""

    async def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        on_text: TextSink,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse: ...


class StreamBrokenError(LLMError):
    """The stream failed after text was shown; `partial` is what had arrived. Never retried:
    a second attempt would show the members the answer twice."""

    def __init__(self, partial: str) -> None:
        super().__init__("stream broke midway")
        self.partial = partial


async def complete_maybe_streaming(
    llm: LLMClient,
    messages: list[dict[str, Any]],
    *,
    tools: list[dict[str, Any]] | None,
    on_text: TextSink | None,
    model: str | None = None,
) -> LLMResponse:
    """Stream when a sink is given and the client can; otherwise one plain completion."""
    if on_text is None or not isinstance(llm, StreamingLLM):
        return await llm.complete(messages, tools=tools, model=model)
    try:
        response = await llm.stream(messages, on_text=on_text, tools=tools, model=model)
    except StreamBrokenError as broken:
        # Members saw `partial`; the transcript keeps exactly that, with the reason.
        log.warning("llm stream broke after %d chars", len(broken.partial))
        text = f"{broken.partial.rstrip()}\n\n{STREAM_BROKEN_NOTICE}"
        return LLMResponse(text, (), 0, 0, llm.model)
    return response


@dataclass(slots=True)
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(slots=True)
class StreamAccumulator:
    """Folds ChatCompletionChunks into content, tool calls and usage."""

    model: str
    parts: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def text(self) -> str:
        return "".join(self.parts)

    def add(self, chunk: Any) -> bool:
        """Take one chunk; True when it added visible text."""
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
            self.completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        if getattr(chunk, "model", None):
            self.model = str(chunk.model)
        grew = False
        for choice in getattr(chunk, "choices", None) or ():
            delta = getattr(choice, "delta", None)
            if delta is None:
                continue
            content = getattr(delta, "content", None)
            if content:
                self.parts.append(content)
                grew = True
            for raw in getattr(delta, "tool_calls", None) or ():
                call = self.calls.setdefault(int(getattr(raw, "index", 0) or 0), _Call())
                call.id = getattr(raw, "id", None) or call.id
                function = getattr(raw, "function", None)
                if function is not None:
                    call.name = getattr(function, "name", None) or call.name
                    call.arguments.append(getattr(function, "arguments", None) or "")
        return grew

    def response(self) -> LLMResponse:
        calls = tuple(
            ToolCall(id=c.id, name=c.name, arguments="".join(c.arguments))
            for _, c in sorted(self.calls.items())
            if c.name
        )
        return LLMResponse(
            content=self.text or None,
            tool_calls=calls,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            model=self.model,
        )


class StreamingChatClient(OpenAIChatClient):
    """`OpenAIChatClient` that can also stream, under the same retry policy."""

    async def stream(
        self,
        messages: list[dict[str, Any]],
        *,
        on_text: TextSink,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        request = self._request(messages, tools, model)

        async def once(body: dict[str, Any], answering: Callable[[], None]) -> LLMResponse:
            async def shown(text: str) -> None:
                answering()
                await on_text(text)

            return await read_stream(self._client, body, shown)

        return await self._with_retries(request, once)


async def read_stream(client: Any, request: dict[str, Any], on_text: TextSink) -> LLMResponse:
    """One streamed request; errors before any text propagate (and may be retried)."""
    stream = await client.chat.completions.create(
        **request, stream=True, stream_options={"include_usage": True}
    )
    acc = StreamAccumulator(request["model"])
    try:
        async for chunk in stream:
            if acc.add(chunk):
                await on_text(acc.text)
    except Exception as exc:
        if not acc.text:
            raise LLMTransientError(f"stream failed: {type(exc).__name__}") from exc
        raise StreamBrokenError(acc.text) from exc
    if not acc.parts and not acc.calls:
        raise LLMTransientError("malformed response: empty stream")
    return acc.response()

"""Compaction always makes progress (SPEC 17): no flood after the bot's reply jams a chat."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from compactbot.bot.app import App
from compactbot.compression.state import CompressorState
from tests.fakes.openai_server import Error, FakeOpenAI, Reply, count_prompt_tokens
from tests.harness import RecordingAdapter, endpoint_env, group_message, make_config, running_app

CHAT = "test:g1"
WINDOW = 8_000
FILLER = "we went over the release notes, the office move and the lunch rota again today"


class _Window:
    """A model that refuses prompts over its window, as a real one does; records every size."""

    def __init__(self) -> None:
        self.prompts: list[int] = []

    def __call__(self, body: dict[str, Any]) -> Reply | Error:
        tokens = count_prompt_tokens(body)
        self.prompts.append(tokens)
        if tokens > WINDOW:
            return Error.context_length_exceeded()
        return Reply("noted")


async def _flood(app: App, adapter: RecordingAdapter, tokens: int) -> None:
    """Unaddressed chatter from several members until `tokens` of it are stored."""
    counter = app.services.counter
    sent, i = 0, 0
    while sent < tokens:
        text = f"flood {i}: {FILLER}"
        sent += counter.count_text(text)
        await app.gateway.handle(group_message(text, author=f"M{i % 7}", addressed=False), adapter)
        i += 1
    await app.gateway.join()


async def _pause_breaker(app: App) -> None:
    store = app.services.store
    session = await store.active_session(CHAT)

    def paused(state: CompressorState) -> CompressorState:
        return replace(state, pause_until=time.time() + 3600, pause_level=3, strikes=1)

    assert await store.apply_state_delta(session.id, session.version, paused) is not None


async def _ask(app: App, adapter: RecordingAdapter, text: str, author: str = "Alice") -> str:
    before = len(adapter.texts())
    await app.gateway.handle(group_message(text, author=author), adapter)
    await app.gateway.join()
    return "\n".join(adapter.texts()[before:])


async def test_a_question_after_a_flood_of_four_windows_following_the_reply_fits_the_window(
    tmp_path: Path,
) -> None:
    model = _Window()
    async with FakeOpenAI(model, context_length=WINDOW) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=WINDOW))
        async with running_app(config) as app:
            adapter = RecordingAdapter(admins={"root"})
            assert await _ask(app, adapter, "what is the plan for the office move? @bot") == "noted"
            await _flood(app, adapter, 4 * WINDOW)
            assert await _ask(app, adapter, "so who moves first? @bot") == "noted"
            assert max(model.prompts) <= WINDOW, model.prompts
            session = await app.services.store.active_session(CHAT)
            assert session.compressor.pause_until < time.time()
            # The first reply could not stay in the tail: it was summarised with its question.
            live = [m.text for m in await app.services.store.load_active(session.id)]
            assert not any("plan for the office move" in text for text in live)
            answer = await _ask(app, adapter, "/compress", author="Root")
            assert answer.startswith("🗜️ Compressed"), answer
            assert max(model.prompts) <= WINDOW, model.prompts


async def test_a_paused_breaker_never_lets_a_request_exceed_the_window(tmp_path: Path) -> None:
    model = _Window()
    async with FakeOpenAI(model, context_length=WINDOW) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=WINDOW))
        async with running_app(config) as app:
            adapter = RecordingAdapter()
            assert await _ask(app, adapter, "what is the plan for the office move? @bot") == "noted"
            await _pause_breaker(app)
            await _flood(app, adapter, 4 * WINDOW)
            flooded = await app.services.store.active_session(CHAT)
            # Hygiene kept compacting once the session no longer fitted (41K tokens without).
            assert flooded.active_tokens < 2 * WINDOW
            assert await _ask(app, adapter, "so who moves first? @bot") == "noted"
            session = await app.services.store.active_session(CHAT)
            # Still paused: only the compactions the requests needed ran.
            assert session.compressor.pause_until > time.time()
            assert max(model.prompts) <= WINDOW, model.prompts

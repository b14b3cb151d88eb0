"""Rate limits and budgets: over the limit means one polite line per window and no model call."""

from __future__ import annotations

import time
from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.ingress.limits import RATE_WINDOW_SECONDS, NoticeGate
from compactbot.bot.store import SqliteStore
from tests.harness import RecordingAdapter, group_message, make_config
from tests.reliability.rig import EchoLLM

CHAT = "test:g1"
SLOW_DOWN = "faster than I can answer"
OUT_OF_BUDGET = "used its token budget for today"


class Clock:
    """Wall time that a test moves forward by hand."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


async def ask(app: App, adapter: RecordingAdapter, author: str, count: int, tag: str) -> None:
    for i in range(count):
        await app.gateway.handle(group_message(f"@bot {tag} {i}", author=author), adapter)
    await app.gateway.join()


async def stored_user_texts(app: App) -> list[str]:
    rows = await app.services.store.load_history(CHAT, include_archived=True)
    return [r.text for r in rows if r.role == "user"]


async def test_member_over_the_rate_limit_is_told_once_per_window_and_the_model_is_not_called(
    tmp_path: Path,
) -> None:
    clock = Clock()
    llm = EchoLLM()
    async with App(make_config(tmp_path), llm=llm, clock=clock) as app:
        await app.services.store.set_chat_setting(CHAT, "user_rate_limit_per_minute", "3")
        adapter = RecordingAdapter()
        await ask(app, adapter, "Bob", 7, "burst")

        assert len(llm.requests) == 3
        bob = adapter.texts()
        assert len(bob) == 4 and sum(SLOW_DOWN in t for t in bob) == 1
        await ask(app, adapter, "Carol", 1, "other member")
        assert len(llm.requests) == 4  # the limit is per member

        clock.now += RATE_WINDOW_SECONDS
        await ask(app, adapter, "Bob", 5, "later")
        assert len(llm.requests) == 7
        assert sum(SLOW_DOWN in t for t in adapter.texts()) == 2  # told again, once, next window
        # Refused messages are still stored as context.
        assert len(await stored_user_texts(app)) == 7 + 1 + 5


async def test_chat_over_its_daily_token_budget_is_told_once_and_the_model_is_not_called(
    tmp_path: Path,
) -> None:
    llm = EchoLLM()
    async with App(make_config(tmp_path), llm=llm) as app:
        await app.services.store.set_chat_setting(CHAT, "daily_token_budget", "100")
        adapter = RecordingAdapter()
        await ask(app, adapter, "Alice", 1, "first")
        assert len(llm.requests) == 1  # the first call takes the chat over its budget

        for author in ("Alice", "Bob", "Carol", "Alice"):
            await ask(app, adapter, author, 1, "more")
        assert len(llm.requests) == 1
        texts = adapter.texts()
        assert len(texts) == 2 and OUT_OF_BUDGET in texts[1]
        assert len(await stored_user_texts(app)) == 5


async def test_notice_gate_says_each_key_once_per_interval(tmp_path: Path) -> None:
    clock = Clock()
    async with SqliteStore(tmp_path / "limits.db") as store:
        gate = NoticeGate(store, "rate", 60.0, clock=clock)
        assert await gate.first(("a",))
        assert not await gate.first(("a",))
        assert await gate.first(("b",))
        clock.now += 59.5
        assert not await gate.first(("a",))
        clock.now += 0.5
        assert await gate.first(("a",))

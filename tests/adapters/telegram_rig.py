"""A running Telegram platform for feature tests: real PTB and App against the fakes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from compactbot.adapters.telegram import TelegramPlatform
from compactbot.bot.app import App
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_server import FakeTelegram
from tests.harness import endpoint_env, make_config, running_app

WAIT_SECONDS = 15
POLL_SECONDS = 0.01
GROUP = -1001
GROUP_KEY = f"telegram:{GROUP}"


@dataclass(frozen=True, slots=True)
class Running:
    app: App
    tg: FakeTelegram
    llm: FakeOpenAI | None

    async def history(self, chat_key: str = GROUP_KEY) -> list[str]:
        rows = await self.app.services.store.load_history(chat_key)
        return [str(row.content) for row in rows]

    async def answered(self) -> None:
        """The first message reached the chat, then every turn behind it finished."""
        await asyncio.wait_for(self.tg.sent.get(), WAIT_SECONDS)
        await self.settle()

    async def settle(self) -> None:
        await asyncio.wait_for(self.app.gateway.join(), WAIT_SECONDS)

    async def stored(self, fragment: str, chat_key: str = GROUP_KEY) -> None:
        """Wait (bounded) until a stored message of the chat contains `fragment`."""

        async def seen() -> None:
            # The store has no change feed to wait on; the poll is bounded by WAIT_SECONDS.
            while not any(fragment in text for text in await self.history(chat_key)):  # noqa: ASYNC110
                await asyncio.sleep(POLL_SECONDS)

        await asyncio.wait_for(seen(), WAIT_SECONDS)


@contextlib.asynccontextmanager
async def serving(
    tmp_path: Path, tg: FakeTelegram, *, offline: bool = False, env: Mapping[str, str] = {}
) -> AsyncIterator[Running]:
    async with contextlib.AsyncExitStack() as stack:
        llm = None if offline else await stack.enter_async_context(FakeOpenAI())
        model_env = {} if llm is None else endpoint_env(llm.base_url, context_length=32_000)
        config = make_config(
            tmp_path,
            {
                **model_env,
                "TELEGRAM_BOT_TOKEN": tg.token,
                "TELEGRAM_API_BASE_URL": tg.base_url,
                **env,
            },
        )
        app = await stack.enter_async_context(running_app(config))
        platform = TelegramPlatform(config, app.gateway)
        await platform.start()
        try:
            yield Running(app, tg, llm)
        finally:
            await platform.stop()

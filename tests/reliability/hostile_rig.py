"""What the hostile-input tests share: a chat's stored texts, and the real Telegram platform
running against the fake Bot API and a fake OpenAI endpoint.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from compactbot.adapters.telegram import TelegramPlatform
from compactbot.bot.app import App
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_server import FakeTelegram
from tests.harness import make_config, running_app

CHAT = "test:g1"


async def texts_stored(app: App, chat_key: str = CHAT) -> list[str]:
    """Every stored text of the chat, archived ones included."""
    rows = await app.services.store.load_history(chat_key, include_archived=True)
    return [r.text for r in rows]


@contextlib.asynccontextmanager
async def telegram_bot(
    tmp_path: Path, tg: FakeTelegram, llm: FakeOpenAI, env: dict[str, str] | None = None
) -> Any:
    """The App with its Telegram platform started against `tg`, its model served by `llm`."""
    config = make_config(
        tmp_path,
        {
            "OPENAI_BASE_URL": llm.base_url,
            "OPENAI_API_KEY": "sk-test-key-for-fakes",
            "COMPACTBOT_MODEL": "fake-model",
            "COMPACTBOT_CONTEXT_LENGTH": "32000",
            "TELEGRAM_BOT_TOKEN": tg.token,
            "TELEGRAM_API_BASE_URL": tg.base_url,
            **(env or {}),
        },
    )
    async with running_app(config) as app:
        platform = TelegramPlatform(config, app.gateway)
        await platform.start()
        try:
            yield app
        finally:
            await platform.stop()

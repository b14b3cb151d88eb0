"""No log line carries a credential, whichever library writes it, with every logger at DEBUG."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from compactbot.adapters.telegram import TelegramPlatform
from compactbot.bot.cli import configure_logging
from compactbot.bot.operators.log_redaction import RedactingFilter
from compactbot.bot.settings.config import ConfigError
from compactbot.bot.settings.loading import load_config
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_server import FakeTelegram
from tests.harness import make_config, running_app

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

PASSWORD = "hunter2-Very-Secret-pw"
API_KEY = "sk-proj-OPENAIsecretKEY0123456789abcdefXYZ"
BOT_TOKEN = "987654321:AAHsecretTelegramTokenValue_0123456789"
WAIT_SECONDS = 10


def every_logger_at_debug() -> None:
    logging.getLogger().setLevel(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        logging.getLogger(name).setLevel(logging.DEBUG)


@pytest.fixture
def saved_log_levels() -> Iterator[None]:
    names = [*logging.root.manager.loggerDict, "httpx2", "openai", "telegram", "aiosqlite"]
    saved = {name: logging.getLogger(name).level for name in names}
    root_level = logging.getLogger().level
    yield
    for name, level in saved.items():
        logging.getLogger(name).setLevel(level)
    logging.getLogger().setLevel(root_level)
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
            handler.removeFilter(old)


async def test_no_log_line_carries_the_url_password_api_key_or_bot_token_at_debug(
    tmp_path: Path, saved_log_levels: None
) -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        async with FakeOpenAI() as llm, FakeTelegram(token=BOT_TOKEN) as tg:
            base_url = llm.base_url.replace("http://", f"http://operator:{PASSWORD}@")
            env = {
                "OPENAI_BASE_URL": base_url,
                "OPENAI_API_KEY": API_KEY,
                "COMPACTBOT_MODEL": "fake-model",
                "TELEGRAM_BOT_TOKEN": BOT_TOKEN,
                "TELEGRAM_API_BASE_URL": tg.base_url,
            }
            config = make_config(tmp_path, env)
            configure_logging(config, interactive=False)  # what `compactbot run` does
            async with running_app(config) as app:
                platform = TelegramPlatform(config, app.gateway)
                every_logger_at_debug()  # after the adapter quieted its libraries
                await platform.start()
                try:
                    tg.push_update(tg.group_message("hello", mention_bot=True))
                    reply = await asyncio.wait_for(tg.sent.get(), WAIT_SECONDS)
                    # A library that logs its settings or a failing request verbatim.
                    logging.getLogger("some.library").warning(
                        "retrying %s with key=%s", base_url, API_KEY, exc_info=ValueError(BOT_TOKEN)
                    )
                finally:
                    await platform.stop()
    finally:
        root.removeHandler(handler)

    logged = stream.getvalue()
    assert reply.text and llm.completions
    # The libraries did log at DEBUG: the request lines of both HTTP clients are there.
    assert "httpx2" in logged and "telegram" in logged and "retrying" in logged
    for name, secret in (("password", PASSWORD), ("API key", API_KEY), ("token", BOT_TOKEN)):
        assert secret not in logged, f"the {name} reached the log"


def test_a_token_pasted_into_a_plain_setting_is_not_echoed_by_the_config_error() -> None:
    with pytest.raises(ConfigError) as caught:
        load_config({"COMPACTBOT_CONTEXT_LENGTH": BOT_TOKEN}, path=None)
    assert BOT_TOKEN not in str(caught.value) and "model.context_length" in str(caught.value)

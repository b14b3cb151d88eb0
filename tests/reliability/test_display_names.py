"""A display name is shown as written in the bot's messages, never as a link or formatting."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from compactbot.adapters.telegram import TelegramPlatform
from compactbot.adapters.telegram_html import render_chunks
from compactbot.bot.app import App
from compactbot.bot.ingress.markdown_escape import escape_markdown
from tests.fakes.telegram_server import FakeTelegram
from tests.harness import RecordingAdapter, group_message, make_config, running_app
from tests.reliability.rig import EchoLLM

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

HOSTILE_NAMES = (
    "[free money](https://evil.example)",
    "**BOLD** _it_ `code` ~~x~~",
    "# Heading",
    "> quoted",
    "<b>html</b> &amp;",
    "@everyone",
    "back\\slash \\[x\\]",
)
WAIT_SECONDS = 10
SLOW_DOWN = "faster than I can answer"
# A Markdown construct that would still be live in the text: an unescaped bracket, star, ...
_UNESCAPED = re.compile(r"(?<!\\)[\[\]*_`~#>]")


async def rate_limit_notice(app: App, name: str) -> str:
    adapter = RecordingAdapter()
    for i in range(2):
        await app.gateway.handle(group_message(f"@bot hi {i}", author=name), adapter)
    await app.gateway.join()
    [notice] = [t for t in adapter.texts() if SLOW_DOWN in t]
    return notice


@pytest.mark.parametrize("name", HOSTILE_NAMES)
async def test_display_name_in_the_rate_limit_notice_is_inert_markdown(
    tmp_path: Path, name: str
) -> None:
    async with App(make_config(tmp_path), llm=EchoLLM()) as app:
        await app.services.store.set_chat_setting("test:g1", "user_rate_limit_per_minute", "1")
        notice = await rate_limit_notice(app, name)

    shown = notice.split(",")[0]
    assert shown == escape_markdown(name)
    assert not _UNESCAPED.search(shown.replace("\\\\", ""))  # Discord renders it as written
    html = render_chunks(notice)[0]  # what Telegram gets
    assert "<a " not in html and "<b>" not in html and "<code>" not in html


async def test_link_shaped_display_name_reaches_telegram_as_plain_text(tmp_path: Path) -> None:
    name = HOSTILE_NAMES[0]
    async with FakeTelegram() as tg:
        config = make_config(
            tmp_path, {"TELEGRAM_BOT_TOKEN": tg.token, "TELEGRAM_API_BASE_URL": tg.base_url}
        )
        async with running_app(config, llm=EchoLLM()) as app:
            chat = "telegram:-1001"
            await app.services.store.set_chat_setting(chat, "user_rate_limit_per_minute", "1")
            platform = TelegramPlatform(config, app.gateway)
            await platform.start()
            try:
                for i in range(2):
                    tg.push_update(tg.group_message(f"hi {i}", first_name=name, mention_bot=True))
                sent = [await asyncio.wait_for(tg.sent.get(), WAIT_SECONDS) for _ in range(2)]
            finally:
                await platform.stop()

    [notice] = [m for m in sent if SLOW_DOWN in m.text]
    assert notice.parse_mode == "HTML" and "<a" not in notice.text
    assert notice.text.startswith(f"{name}, you're sending")

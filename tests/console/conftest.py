"""A running App with the console on, two seeded chats, and Debian's Chromium through Playwright.

Browser tests skip with one line when /usr/bin/chromium (or Playwright) is missing; with
COMPACTBOT_REQUIRE_BROWSER=1 (CI) that skip is a failure instead.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from compactbot.bot.app import App
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.operators.console.urls import chat_url
from compactbot.bot.operators.doctor import doctor_for
from tests.console.seed import SeededChat, seed_chat
from tests.fakes.fixtures import free_port  # noqa: F401  (pytest fixture)
from tests.harness import RecordingAdapter, group_message, make_config

BROWSER_PATH = "/usr/bin/chromium"
REQUIRE_ENV = "COMPACTBOT_REQUIRE_BROWSER"
# Nothing leaves the machine: no component updates, sync, metrics or first-run pages.
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
OPERATOR = "ops"
TOKEN = "ops-token-for-tests-0123456789"
CHAT_A = "telegram:-1001"
CHAT_B = "telegram:-1002"
ADMIN_ID = "42"
LINK = re.compile(r"https?://\S+/console/link/[0-9a-f]+")


def require_browser() -> str:
    """The Chromium binary; skips (or fails, when required) without it or without Playwright."""
    reason = None
    if importlib.util.find_spec("playwright") is None:
        reason = "Playwright is not installed (pip install -e '.[test]')"
    elif not os.access(BROWSER_PATH, os.X_OK):
        reason = f"no Chromium at {BROWSER_PATH} (apt-get install chromium chromium-driver)"
    if reason is not None:
        if os.environ.get(REQUIRE_ENV, "") not in ("", "0"):
            pytest.fail(f"{reason}; {REQUIRE_ENV}=1 makes this a failure", pytrace=False)
        pytest.skip(reason)
    return BROWSER_PATH


@dataclass
class Console:
    app: App
    base: str
    a: SeededChat
    b: SeededChat
    adapter: RecordingAdapter

    def url(self, path: str) -> str:
        return self.base + path

    async def admin_link(self, chat_id: str = "-1001", author_id: str = ADMIN_ID) -> str:
        """What `/console` sends an admin of the chat privately, through the real gateway."""
        self.adapter.admins.add(author_id)
        message = replace(
            group_message("/console", author="Admin", chat_id=chat_id, platform="telegram"),
            author_id=author_id,
        )
        before = len(self.adapter.sent)
        await self.app.gateway.handle(message, self.adapter)
        await asyncio.wait_for(self.app.gateway.join(), 5)
        for target, text in self.adapter.sent[before:]:
            found = LINK.search(text)
            if found is not None and target.chat_id == author_id:
                return found.group(0)
        raise AssertionError(f"no private link sent: {self.adapter.sent[before:]}")


async def operator_page(console: Console, browser: Any) -> Any:
    """A new browser context signed in with the operator token, on the overview."""
    page = await (await browser.new_context()).new_page()
    await page.goto(console.url("/console/"))
    # Redirected to the sign-in form, whose token field takes the focus: keyboard only.
    await page.wait_for_function("document.activeElement && document.activeElement.id === 'token'")
    await page.keyboard.type(TOKEN)
    await page.keyboard.press("Enter")
    await page.wait_for_url(console.url("/console/"))
    return page


async def admin_page(console: Console, browser: Any, link: str) -> Any:
    """A new browser context signed in through a chat admin's one-time link, on that chat."""
    page = await (await browser.new_context()).new_page()
    await page.goto(link)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(console.url(chat_url(CHAT_A)))
    return page


@pytest.fixture
async def console(tmp_path: Path, free_port: int) -> AsyncIterator[Console]:  # noqa: F811
    env = {
        "COMPACTBOT_CONSOLE": "on",
        "COMPACTBOT_METRICS_LISTEN": f"127.0.0.1:{free_port}",
        "COMPACTBOT_CONSOLE_TOKENS": f"{OPERATOR}:{TOKEN}",
    }
    async with App(make_config(tmp_path, env), llm=OfflineModel()) as app:
        store = app.services.store
        now = time.time()
        a = await seed_chat(
            store, CHAT_A, title="Platform team", platform="telegram", start=now - 3600
        )
        b = await seed_chat(
            store, CHAT_B, title="Design guild", platform="telegram", start=now - 7200
        )
        await app.start_operator_endpoint(doctor=doctor_for(app.config))
        yield Console(app, f"http://127.0.0.1:{free_port}", a, b, RecordingAdapter("telegram"))


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    path = require_browser()
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=path, headless=True, args=BROWSER_ARGS
        )
        try:
            yield launched
        finally:
            await launched.close()

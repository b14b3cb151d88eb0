"""Screenshots of every console page into docs/: `python -m bench.console_screenshots`.

A real App on a temporary SQLite store with seeded chats, Debian's Chromium through Playwright
(as tests/console), one PNG per page, cut to the first screenful to keep them small. Chinese text
needs a CJK font in the browser's system (Debian: `apt-get install fonts-wqy-microhei`).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from playwright.async_api import async_playwright

from compactbot.bot.app import App
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.operators.console.urls import chat_url
from compactbot.bot.operators.doctor import doctor_for
from tests.console.conftest import BROWSER_ARGS, BROWSER_PATH
from tests.console.seed import seed_chat
from tests.harness import make_config

DOCS = Path(__file__).resolve().parent.parent / "docs"
VIEWPORT = {"width": 1100, "height": 760}
TOKEN = "shots-token-0123456789abcdef"
PORT = 18_799
# (key, title, hours since its compaction, the last prompt the provider reported)
CHATS = (
    ("telegram:-1001234", "Platform team", 1, 41_200),
    ("discord:8812", "#design-guild", 2, 88_400),
    ("telegram:-1009876", "Support rota", 5, 12_900),
)
BREAKER_PAUSE_SECONDS = 300
# The last chat's pins outgrow the summary's cap, so the overview shows that warning.
ROTA_PIN = "Rota rule {i}: whoever holds the pager on {i} hands it over in the #support channel."


async def _shoot(page: Any, name: str) -> None:
    path = DOCS / f"console-{name}.png"
    await page.screenshot(path=str(path), full_page=False)
    print(f"{path.relative_to(DOCS.parent)}  {path.stat().st_size // 1024} KiB")


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        env = {
            "COMPACTBOT_CONSOLE": "on",
            "COMPACTBOT_METRICS_LISTEN": f"127.0.0.1:{PORT}",
            "COMPACTBOT_CONSOLE_TOKENS": f"operator:{TOKEN}",
        }
        async with App(make_config(Path(folder), env), llm=OfflineModel()) as app:
            now = time.time()
            store = app.services.store
            for key, title, hours, prompt in CHATS:
                seeded = await seed_chat(
                    store,
                    key,
                    title=title,
                    platform=key.split(":")[0],
                    start=now - hours * 3600,
                    filler_messages=300 * hours,
                    # The first chat keeps only the named entries, so its memory page shows them.
                    extra_entries=30 if key != CHATS[0][0] else 0,
                    usage_days=30,
                )
                # What a running bot would have recorded since: the provider's prompt count,
                # and on one chat a breaker pause.
                state = (await store.get_session(seeded.session_id)).compressor
                paused = now + BREAKER_PAUSE_SECONDS if prompt > 80_000 else 0.0
                await store.save_compressor_state(
                    seeded.session_id, replace(state, last_prompt_tokens=prompt, pause_until=paused)
                )
            await store.set_chat_setting(CHATS[0][0], "daily_token_budget", "20000")
            rota = CHATS[-1][0]
            settings = app.services.compaction_settings(await app.services.settings_for(rota))
            pin_tokens = app.services.counter.count_text(ROTA_PIN.format(i=0))
            for i in range(settings.memory_cap_tokens // pin_tokens + 1):
                await store.add_pin(rota, ROTA_PIN.format(i=i), "Dana")
            await app.start_operator_endpoint(doctor=doctor_for(app.config))
            await _pages(f"http://127.0.0.1:{PORT}", CHATS[0][0])


async def _pages(base: str, chat: str) -> None:
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=BROWSER_PATH, headless=True, args=BROWSER_ARGS
        )
        page = await (await browser.new_context(viewport=VIEWPORT)).new_page()
        await page.goto(base + "/console/")
        await _shoot(page, "signin")
        await page.get_by_label("Operator token").fill(TOKEN)
        await page.keyboard.press("Enter")
        await page.wait_for_url(base + "/console/")
        await _shoot(page, "overview")
        await page.goto(base + chat_url(chat))
        await _shoot(page, "chat")
        await page.goto(base + chat_url(chat, "memory"))
        await _shoot(page, "memory")
        row = page.get_by_role("row").filter(has_text="Never deploy on Fridays.")
        await row.get_by_role("link").click()
        await _shoot(page, "sources")
        # Members' notes, not the summary row, so the purge buttons show in the first screenful.
        await page.goto(base + chat_url(chat, "search", q="is green"))
        await _shoot(page, "search")
        hit = page.locator("ol.messages li").filter(has_text="[Bob]").first
        await hit.get_by_role("button", name="Purge everything Bob wrote…").click()
        await _shoot(page, "purge")
        await page.goto(base + chat_url(chat, "settings"))
        await page.get_by_label("New value of threshold").fill("0.6")
        await page.locator("#setting-threshold").get_by_role("button", name="Save").click()
        await _shoot(page, "settings")
        await page.goto(base + "/console/usage")
        await _shoot(page, "usage")
        await page.goto(base + "/console/audit")
        await _shoot(page, "audit")
        await page.goto(base + "/console/lang/zh?next=/console/")
        await _shoot(page, "overview-zh")
        await browser.close()


if __name__ == "__main__":
    asyncio.run(main())

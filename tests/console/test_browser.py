"""The console in Debian's Chromium, driven by Playwright against a real App on SQLite (SPEC 18)."""

from __future__ import annotations

from typing import Any

from compactbot.bot.operators.console.urls import chat_url
from tests.console.conftest import CHAT_A, CHAT_B, OPERATOR, Console, admin_page, operator_page


async def test_operator_signs_in_and_opens_every_page(console: Console, browser: Any) -> None:
    page = await operator_page(console, browser)
    assert await page.get_by_role("heading", name="Overview").is_visible()
    assert await page.get_by_role("link", name="Platform team").is_visible()
    assert await page.get_by_role("link", name="Design guild").is_visible()
    assert "store" in await page.locator("ul.health").inner_text()

    await page.get_by_role("link", name="Platform team").click()
    summary = await page.locator("pre.summary").inner_text()
    assert summary.startswith("[CONTEXT COMPACTION — REFERENCE ONLY]")
    assert "Never deploy on Fridays." in summary
    history = await page.locator("table").first.inner_text()
    assert "hygiene" in history and "compressed" in history and "overnight" in history
    assert "+49 30 1234567" in await page.locator("ol.pins").inner_text()

    for tab, marker in (
        ("Memory", "Use PostgreSQL 16 as the primary database."),
        ("Settings", "hygiene_hard_message_limit"),
        ("Search", "Search the archive"),
    ):
        await page.get_by_role("navigation", name="This chat").get_by_role("link", name=tab).click()
        assert marker in await page.locator("main").inner_text(), tab

    await page.get_by_label("Words or part of a word").fill("PostgreSQL 16")
    await page.get_by_role("button", name="Search").click()
    assert "Let's go with PostgreSQL 16" in await page.locator("ol.messages").inner_text()

    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Usage").click()
    assert await page.locator("svg.chart rect.bar").count() > 0
    assert "Per chat" in await page.locator("main").inner_text()
    await page.get_by_role("link", name="Audit log").click()
    assert "sign in" in await page.locator("table.audit").inner_text()
    await page.get_by_role("link", name="Health").click()
    assert "Doctor" in await page.locator("main").inner_text()


async def test_memory_entry_links_to_its_archived_source_messages(
    console: Console, browser: Any
) -> None:
    page = await operator_page(console, browser)
    await page.goto(console.url(chat_url(CHAT_A, "memory")))
    row = page.get_by_role("row").filter(has_text="Never deploy on Fridays.")
    await row.get_by_role("link", name="messages: 1").click()
    shown = await page.locator("ol.messages").inner_text()
    assert "[Alice] Morning all. Reminder: we never deploy on Fridays." in shown
    assert "archived" in shown


async def test_chat_admin_changes_a_setting_within_bounds_and_is_refused_outside(
    console: Console, browser: Any
) -> None:
    page = await admin_page(console, browser, await console.admin_link())
    await page.goto(console.url(chat_url(CHAT_A, "settings")))
    await page.get_by_label("New value of threshold").fill("0.6")
    await page.locator("#setting-threshold").get_by_role("button", name="Save").click()
    assert "Saved: threshold" in await page.get_by_role("status").inner_text()
    store = console.app.services.store
    assert (await store.get_chat_settings(CHAT_A))["threshold"] == "0.6"

    await page.get_by_label("New value of threshold").fill("0.95")
    await page.locator("#setting-threshold").get_by_role("button", name="Save").click()
    refusal = await page.get_by_role("alert").inner_text()
    assert "outside the allowed range 0.30–0.90" in refusal
    assert (await store.get_chat_settings(CHAT_A))["threshold"] == "0.6"
    # Operator-only keys are not offered to a chat admin at all.
    assert "operators only" in await page.locator("#setting-daily_token_budget").inner_text()


async def test_post_without_csrf_token_is_refused(console: Console, browser: Any) -> None:
    page = await operator_page(console, browser)
    response = await page.request.post(
        console.url(chat_url(CHAT_A, "settings")), form={"key": "threshold", "value": "0.5"}
    )
    assert response.status == 403
    assert "This form has expired" in await response.text()
    assert "threshold" not in await console.app.services.store.get_chat_settings(CHAT_A)


async def test_chat_admin_link_is_refused_for_another_chat(console: Console, browser: Any) -> None:
    page = await admin_page(console, browser, await console.admin_link())
    response = await page.goto(console.url(chat_url(CHAT_B)))
    assert response.status == 403
    assert "You may not see this chat." in await page.get_by_role("alert").inner_text()
    response = await page.goto(console.url(chat_url(CHAT_B, "settings")))
    assert response.status == 403
    await page.goto(console.url("/console/"))
    overview = await page.locator("main").inner_text()
    assert "Platform team" in overview and "Design guild" not in overview


async def test_one_time_link_is_refused_the_second_time(console: Console, browser: Any) -> None:
    link = await console.admin_link()
    await admin_page(console, browser, link)
    page = await (await browser.new_context()).new_page()
    await page.goto(link)
    await page.get_by_role("button", name="Sign in").click()
    assert "it was used, or it expired" in await page.get_by_role("alert").inner_text()
    response = await page.goto(console.url(chat_url(CHAT_A)))
    assert response.url.startswith(console.url("/console/signin"))


async def test_audit_rows_show_who_changed_what(console: Console, browser: Any) -> None:
    page = await operator_page(console, browser)
    await page.goto(console.url(chat_url(CHAT_B, "settings")))
    await page.get_by_label("New value of daily_token_budget").fill("250000")
    await page.locator("#setting-daily_token_budget").get_by_role("button", name="Save").click()
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Audit log").click()
    row = page.get_by_role("row").filter(has_text="daily_token_budget = 250000")
    text = await row.inner_text()
    assert OPERATOR in text and CHAT_B in text and "UTC" in text


async def test_language_switch_shows_the_pages_in_chinese(console: Console, browser: Any) -> None:
    page = await operator_page(console, browser)
    await page.get_by_role("link", name="中文").click()
    assert await page.get_by_role("heading", name="概览").is_visible()
    await page.get_by_role("link", name="Platform team").click()
    assert await page.get_by_role("heading", name="模型看到的摘要").is_visible()


async def test_skip_link_is_the_first_stop_of_the_keyboard(console: Console, browser: Any) -> None:
    page = await operator_page(console, browser)
    await page.keyboard.press("Tab")
    focused = await page.evaluate("document.activeElement.textContent")
    assert focused == "Skip to content"

"""Purging and the memory cap warning in Debian's Chromium, against a real App on SQLite."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from compactbot.bot.operators.console.urls import chat_url
from tests.console.conftest import CHAT_A, CHAT_B, OPERATOR, Console, admin_page, operator_page
from tests.harness import group_message

# Bob wrote two of the seeded talk's lines and every fourth filler note, in both chats.
BOB_TALK = "Agreed. The budget cap for the cloud bill is 500 EUR a month."
PIN_TEXT = (
    "Rule {i}: never ship crate {i} before the signed customs form reaches Grace, "
    "and always copy the warehouse lead on the confirmation mail."
)
OVERFLOW = re.compile(r"need ([\d,]+) tokens, over the summary's cap of ([\d,]+)")


async def _search(page: Any, console: Console, chat: str, query: str) -> str:
    await page.goto(console.url(chat_url(chat, "search", q=query)))
    return str(await page.locator("main").inner_text())


async def test_operator_purges_a_members_messages_after_confirming(
    console: Console, browser: Any
) -> None:
    store = console.app.services.store
    bob_in_a = await store.count_member_messages(CHAT_A, "bob")
    bob_in_b = await store.count_member_messages(CHAT_B, "bob")
    page = await operator_page(console, browser)
    await _search(page, console, CHAT_A, "budget cap")
    hit = page.locator("ol.messages li").filter(has_text=BOB_TALK)
    await hit.get_by_role("button", name="Purge everything Bob wrote…").click()

    confirm = await page.locator("main").inner_text()
    assert f"All {bob_in_a} messages that member bob (Bob) wrote in this chat" in confirm
    assert await store.count_member_messages(CHAT_A, "bob") == bob_in_a  # not yet
    await page.get_by_role("button", name=f"Erase {bob_in_a} messages").click()

    await page.wait_for_url(re.compile(r".*/console/chat/[^/?]+\?purged=\d+$"))
    assert "stored messages are gone" in await page.get_by_role("status").inner_text()
    assert "500 EUR a month" not in await page.locator("pre.summary").inner_text()
    assert "Nothing found." in await _search(page, console, CHAT_A, "budget cap")
    assert "Let's go with PostgreSQL 16" in await _search(page, console, CHAT_A, "PostgreSQL 16")
    await page.goto(console.url(chat_url(CHAT_A, "memory")))
    memory = await page.locator("main").inner_text()
    assert "500 EUR a month" not in memory and "wiki.example.org" not in memory
    assert "Never deploy on Fridays." in memory
    assert await store.count_member_messages(CHAT_A, "bob") == 0
    assert await store.count_member_messages(CHAT_B, "bob") == bob_in_b

    await page.goto(console.url("/console/audit"))
    row = await page.get_by_role("row").filter(has_text="member bob").inner_text()
    assert "purge" in row and OPERATOR in row and CHAT_A in row


async def test_operator_purges_one_archived_message_from_an_entrys_sources(
    console: Console, browser: Any
) -> None:
    page = await operator_page(console, browser)
    await page.goto(console.url(chat_url(CHAT_A, "memory")))
    row = page.get_by_role("row").filter(has_text="Never deploy on Fridays.")
    await row.get_by_role("link", name="messages: 1").click()
    await page.get_by_role("button", name="Purge this message…").click()
    assert "we never deploy on Fridays." in await page.locator("ol.messages").inner_text()
    await page.get_by_role("button", name="Erase this message").click()

    assert "Purged: 1 stored messages" in await page.get_by_role("status").inner_text()
    assert "Nothing found." in await _search(page, console, CHAT_A, "Fridays")
    assert "Let's go with PostgreSQL 16" in await _search(page, console, CHAT_A, "PostgreSQL 16")
    await page.goto(console.url(chat_url(CHAT_A, "memory")))
    assert "Never deploy on Fridays." not in await page.locator("main").inner_text()


async def test_chat_admin_link_cannot_purge_in_another_chat(console: Console, browser: Any) -> None:
    store = console.app.services.store
    bob_in_b = await store.count_member_messages(CHAT_B, "bob")
    page = await admin_page(console, browser, await console.admin_link())
    csrf = await page.locator("input[name=csrf]").first.get_attribute("value")
    erase_bob = {"csrf": csrf, "what": "member", "member": "bob", "confirm": "1"}
    refused = await page.request.post(console.url(chat_url(CHAT_B, "purge")), form=erase_bob)
    assert refused.status == 403
    assert "You may not see this chat." in await refused.text()
    # Nor through its own chat's page, naming a message of the other chat's session.
    smuggled = {
        "csrf": csrf,
        "what": "message",
        "session": str(console.b.session_id),
        "message": str(console.b.archived_ids[1]),
        "confirm": "1",
    }
    missing = await page.request.post(console.url(chat_url(CHAT_A, "purge")), form=smuggled)
    assert missing.status == 404
    assert BOB_TALK not in await missing.text()
    assert await store.count_member_messages(CHAT_B, "bob") == bob_in_b
    # Their own chat's search still offers the purge: the refusals above were about the chat.
    assert BOB_TALK in await _search(page, console, CHAT_A, "budget cap")
    assert await page.get_by_role("button", name="Purge everything Bob wrote…").count() == 1


async def test_purge_post_without_csrf_token_is_refused(console: Console, browser: Any) -> None:
    store = console.app.services.store
    bob_in_a = await store.count_member_messages(CHAT_A, "bob")
    page = await operator_page(console, browser)
    response = await page.request.post(
        console.url(chat_url(CHAT_A, "purge")),
        form={"what": "member", "member": "bob", "confirm": "1"},
    )
    assert response.status == 403
    assert "This form has expired" in await response.text()
    assert await store.count_member_messages(CHAT_A, "bob") == bob_in_a
    assert all(entry.action != "purge" for entry in await store.list_audit(chat_key=CHAT_A))


async def test_cap_warning_shows_for_a_chat_whose_memory_outgrows_the_cap(
    console: Console, browser: Any
) -> None:
    services = console.app.services
    cap = services.compaction_settings(await services.settings_for(CHAT_B)).memory_cap_tokens
    for i in range(cap // services.counter.count_text(PIN_TEXT.format(i=0)) + 1):
        await services.store.add_pin(CHAT_B, PIN_TEXT.format(i=i), "alice")
    page = await operator_page(console, browser)
    warned = await page.get_by_role("row").filter(has_text="Design guild").inner_text()
    assert "Must-show memory needs" in warned
    quiet = await page.get_by_role("row").filter(has_text="Platform team").inner_text()
    assert "Must-show memory" not in quiet

    await page.get_by_role("link", name="Design guild").click()
    shown = OVERFLOW.search(await page.get_by_role("status").inner_text())
    assert shown is not None and shown.group(2) == f"{cap:,}"
    # The same numbers /status gives in the chat itself.
    await console.app.gateway.handle(
        group_message("/status", chat_id="-1002", platform="telegram"), console.adapter
    )
    await asyncio.wait_for(console.app.gateway.join(), 5)
    status = OVERFLOW.search(console.adapter.texts()[-1])
    assert status is not None and status.groups() == shown.groups()

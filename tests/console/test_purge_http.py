"""Purging over plain HTTP: nothing changes before the confirmation, the audit keeps no text."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import aiohttp
import pytest

from compactbot.bot.operators.console.urls import chat_url
from compactbot.bot.store import NewMessage
from tests.console.conftest import CHAT_A, TOKEN, Console

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@pytest.fixture
async def signed_in(console: Console) -> AsyncIterator[tuple[aiohttp.ClientSession, str]]:
    """An operator's HTTP client and the CSRF token of its session."""
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        form = CSRF.search(await (await http.get(console.url("/console/signin"))).text())
        assert form is not None
        data = {"csrf": form.group(1), "token": TOKEN, "next": "/console/"}
        overview = await http.post(console.url("/console/signin"), data=data)
        session = CSRF.search(await overview.text())
        assert overview.status == 200 and session is not None
        yield http, session.group(1)


async def _post(
    http: aiohttp.ClientSession, console: Console, fields: dict[str, str]
) -> aiohttp.ClientResponse:
    return await http.post(
        console.url(chat_url(CHAT_A, "purge")), data=fields, allow_redirects=False
    )


async def test_the_first_purge_post_only_shows_what_would_be_erased(
    console: Console, signed_in: tuple[aiohttp.ClientSession, str]
) -> None:
    http, csrf = signed_in
    store = console.app.services.store
    before = await store.count_member_messages(CHAT_A, "bob")
    asked = await _post(http, console, {"csrf": csrf, "what": "member", "member": "bob"})
    assert asked.status == 200
    page = await asked.text()
    assert f"All {before} messages that member bob wrote in this chat" in page
    assert 'name="confirm" value="1"' in page
    assert await store.count_member_messages(CHAT_A, "bob") == before
    assert all(entry.action != "purge" for entry in await store.list_audit(chat_key=CHAT_A))


async def test_a_confirmed_purge_is_audited_with_ids_and_counts_but_no_text(
    console: Console, signed_in: tuple[aiohttp.ClientSession, str]
) -> None:
    http, csrf = signed_in
    store = console.app.services.store
    before = await store.count_member_messages(CHAT_A, "bob")
    fields = {"csrf": csrf, "what": "member", "member": "bob", "confirm": "1"}
    done = await _post(http, console, fields)
    assert done.status == 303
    erased = int(done.headers["Location"].rpartition("purged=")[2])
    assert erased == before > 0  # the seed keeps one row per message: no tail copies
    entry = next(e for e in await store.list_audit(chat_key=CHAT_A) if e.action == "purge")
    assert entry.detail == f"member bob: {erased} stored rows" and entry.who == "ops"
    assert await store.count_member_messages(CHAT_A, "bob") == 0


async def test_a_message_of_another_chats_session_is_not_found(
    console: Console, signed_in: tuple[aiohttp.ClientSession, str]
) -> None:
    http, csrf = signed_in
    other = console.b
    fields = {
        "csrf": csrf,
        "what": "message",
        "session": str(other.session_id),
        "message": str(other.archived_ids[0]),
    }
    response = await _post(http, console, fields)
    assert response.status == 404
    assert "Morning all" not in await response.text()


async def test_a_summary_row_cannot_be_purged_alone(
    console: Console, signed_in: tuple[aiohttp.ClientSession, str]
) -> None:
    http, csrf = signed_in
    store = console.app.services.store
    summary = next(m for m in await store.load_active(console.a.session_id) if m.kind == "summary")
    fields = {
        "csrf": csrf,
        "what": "message",
        "session": str(console.a.session_id),
        "message": str(summary.id),
        "confirm": "1",
    }
    response = await _post(http, console, fields)
    assert response.status == 400
    assert "can be purged on its own." in await response.text()
    assert any(m.id == summary.id for m in await store.load_active(console.a.session_id))


async def test_the_bots_reply_stored_without_a_platform_id_is_purged_by_its_row(
    console: Console, signed_in: tuple[aiohttp.ClientSession, str]
) -> None:
    http, csrf = signed_in
    store = console.app.services.store
    said = NewMessage("assistant", "Noted: the vault code is 7731.", 9)
    [reply_id] = await store.append_messages(console.a.session_id, [said])
    [reply] = await store.load_messages(console.a.session_id, [reply_id])
    assert reply.platform_message_id is None
    fields = {
        "csrf": csrf,
        "what": "message",
        "session": str(console.a.session_id),
        "message": str(reply.id),
        "confirm": "1",
    }
    done = await _post(http, console, fields)
    assert done.status == 303
    assert all(m.id != reply.id for m in await store.load_active(console.a.session_id))
    entry = next(e for e in await store.list_audit(chat_key=CHAT_A) if e.action == "purge")
    assert entry.detail.startswith(f"message row {reply.id}: ")


@pytest.mark.parametrize("member", ["", "two words", "x" * 65, "bell\a"])
async def test_a_malformed_member_id_is_refused(
    console: Console, signed_in: tuple[aiohttp.ClientSession, str], member: str
) -> None:
    http, csrf = signed_in
    fields = {"csrf": csrf, "what": "member", "member": member, "confirm": "1"}
    response = await _post(http, console, fields)
    assert response.status == 400
    assert "A member id is one word" in await response.text()

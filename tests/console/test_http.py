"""The console over plain HTTP: cookie flags, CSRF, headers, the /console command's delivery."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from http.cookies import SimpleCookie
from pathlib import Path

import aiohttp
import pytest

from compactbot.bot.app import App
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.operators.console.urls import chat_url
from tests.console.conftest import CHAT_A, TOKEN
from tests.console.seed import SEED_SUMMARY_CALLS, SEED_SUMMARY_COST, seed_chat
from tests.fakes.fixtures import free_port  # noqa: F401  (pytest fixture)
from tests.harness import RecordingAdapter, group_message, make_config

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


@pytest.fixture
async def proxied(tmp_path: Path, free_port: int) -> AsyncIterator[tuple[App, str]]:  # noqa: F811
    env = {
        "COMPACTBOT_CONSOLE": "on",
        "COMPACTBOT_METRICS_LISTEN": f"127.0.0.1:{free_port}",
        "COMPACTBOT_CONSOLE_TOKENS": f"ops:{TOKEN}",
        "COMPACTBOT_CONSOLE_TRUSTED_PROXIES": "127.0.0.1",
        "COMPACTBOT_CONSOLE_PUBLIC_URL": "https://bot.example.org",
    }
    async with App(make_config(tmp_path, env), llm=OfflineModel()) as app:
        await seed_chat(
            app.services.store, CHAT_A, title="T", platform="telegram", start=time.time()
        )
        await app.start_operator_endpoint()
        yield app, f"http://127.0.0.1:{free_port}"


def _set_cookies(response: aiohttp.ClientResponse) -> dict[str, str]:
    found = {}
    for header in response.headers.getall("Set-Cookie", []):
        name = SimpleCookie(header)
        found[next(iter(name))] = header
    return found


async def _sign_in(http: aiohttp.ClientSession, base: str, proto: str) -> aiohttp.ClientResponse:
    headers = {"X-Forwarded-Proto": proto}
    form = await http.get(f"{base}/console/signin", headers=headers)
    csrf = CSRF.search(await form.text())
    assert csrf is not None
    # Sent by hand: a client only returns a Secure cookie over TLS, which the proxy ends here.
    cookie = SimpleCookie(_set_cookies(form)["compactbot_form"])["compactbot_form"].value
    return await http.post(
        f"{base}/console/signin",
        data={"csrf": csrf.group(1), "token": TOKEN, "next": "/console/"},
        headers={**headers, "Cookie": f"compactbot_form={cookie}"},
        allow_redirects=False,
    )


@pytest.mark.parametrize(("proto", "secure"), [("https", True), ("http", False)])
async def test_session_cookie_is_httponly_strict_and_secure_behind_tls(
    proxied: tuple[App, str], proto: str, secure: bool
) -> None:
    _, base = proxied
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        response = await _sign_in(http, base, proto)
        assert response.status == 303
        cookie = _set_cookies(response)["compactbot_session"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie
        assert ("Secure" in cookie) is secure


async def test_pages_forbid_framing_scripts_and_outside_assets(proxied: tuple[App, str]) -> None:
    _, base = proxied
    async with aiohttp.ClientSession() as http:
        response = await http.get(f"{base}/console/signin")
        policy = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "frame-ancestors 'none'" in policy
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert response.headers["Cache-Control"] == "no-store"
        html = await response.text()
        assert "<script" not in html and "http://" not in html and "https://" not in html


async def test_sign_in_form_without_its_token_is_refused(proxied: tuple[App, str]) -> None:
    _, base = proxied
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        await http.get(f"{base}/console/signin")
        response = await http.post(
            f"{base}/console/signin", data={"token": TOKEN}, allow_redirects=False
        )
        assert response.status == 403
        assert "compactbot_session" not in _set_cookies(response)


async def test_signing_out_ends_the_session_in_the_store(proxied: tuple[App, str]) -> None:
    _, base = proxied
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        await _sign_in(http, base, "http")
        page = await http.get(f"{base}{chat_url(CHAT_A)}")
        csrf = CSRF.search(await page.text())
        assert page.status == 200 and csrf is not None
        secret = http.cookie_jar.filter_cookies(aiohttp.client.URL(f"{base}/console/"))
        kept = secret["compactbot_session"].value
        await http.post(f"{base}/console/signout", data={"csrf": csrf.group(1)})
    async with aiohttp.ClientSession() as replay:
        stale = await replay.get(
            f"{base}{chat_url(CHAT_A)}",
            headers={"Cookie": f"compactbot_session={kept}"},
            allow_redirects=False,
        )
        assert stale.status == 303 and "/console/signin" in stale.headers["Location"]


async def test_compaction_history_shows_summary_calls_and_their_cost(
    proxied: tuple[App, str],
) -> None:
    _, base = proxied
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        await _sign_in(http, base, "http")
        html = await (await http.get(f"{base}{chat_url(CHAT_A)}")).text()
    assert "Summary calls" in html and "Cost (tokens)" in html
    hygiene = next(row for row in html.split("<tr>") if ">hygiene<" in row)
    assert f"<td>{SEED_SUMMARY_CALLS}</td>" in hygiene
    assert f"<td>{SEED_SUMMARY_COST:,}</td>" in hygiene


async def test_console_link_goes_to_the_admin_privately_with_the_public_url(
    proxied: tuple[App, str],
) -> None:
    app, _ = proxied
    adapter = RecordingAdapter("telegram", admins={"42"})
    message = replace(
        group_message("/console", author="Ann", chat_id="-1001", platform="telegram"),
        author_id="42",
    )
    await app.gateway.handle(message, adapter)
    await asyncio.wait_for(app.gateway.join(), 5)
    private = [text for target, text in adapter.sent if target.chat_id == "42"]
    public = [text for target, text in adapter.sent if target.chat_id == "-1001"]
    assert len(private) == 1 and "https://bot.example.org/console/link/" in private[0]
    assert public == ["📬 Ann, I sent you a sign-in link privately."]
    audit = await app.services.store.list_audit(chat_key=CHAT_A)
    assert audit[0].action == "sign-in link issued" and "telegram:42" in audit[0].who


async def test_console_link_is_never_posted_in_a_group_it_cannot_answer_privately(
    proxied: tuple[App, str],
) -> None:
    app, _ = proxied
    adapter = RecordingAdapter("discord", admins={"ann"})
    await app.gateway.handle(group_message("/console", author="Ann", platform="discord"), adapter)
    telegram = RecordingAdapter("telegram", admins={"bob"}, fail_sends=1)
    message = group_message("/console", author="Bob", chat_id="-1001", platform="telegram")
    await app.gateway.handle(message, telegram)
    await asyncio.wait_for(app.gateway.join(), 5)
    assert adapter.texts() == ["Use the /console slash command: its answer is shown to you alone."]
    assert all("/console/link/" not in text for text in telegram.texts())
    assert "Start a private chat with me" in telegram.texts()[-1]


async def test_console_command_needs_chat_admin_rights(proxied: tuple[App, str]) -> None:
    app, _ = proxied
    adapter = RecordingAdapter("telegram")
    message = group_message("/console", author="Mallory", chat_id="-1001", platform="telegram")
    await app.gateway.handle(message, adapter)
    await asyncio.wait_for(app.gateway.join(), 5)
    assert adapter.texts() == ["⛔ /console needs chat-admin rights here. Nothing was changed."]


async def test_console_command_says_so_when_the_console_is_off(tmp_path: Path) -> None:
    async with App(make_config(tmp_path), llm=OfflineModel()) as app:
        adapter = RecordingAdapter("telegram")
        message = group_message("/console", chat_id="-5", platform="telegram", is_group=False)
        await app.gateway.handle(message, adapter)
        await asyncio.wait_for(app.gateway.join(), 5)
        assert adapter.texts() == ["The web console is not enabled on this bot."]
        await app.start_operator_endpoint()
        assert app._endpoint is None  # off unless configured


async def test_a_chat_admin_cannot_post_an_operator_only_setting(proxied: tuple[App, str]) -> None:
    app, base = proxied
    adapter = RecordingAdapter("telegram", admins={"42"})
    message = replace(
        group_message("/console", author="Ann", chat_id="-1001", platform="telegram"),
        author_id="42",
    )
    await app.gateway.handle(message, adapter)
    await asyncio.wait_for(app.gateway.join(), 5)
    link = re.search(r"/console/link/[0-9a-f]+", adapter.sent[0][1])
    assert link is not None
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        form = await http.get(base + link.group(0))
        fields = dict(re.findall(r'name="(csrf|secret)" value="([0-9a-f]+)"', await form.text()))
        signed = await http.post(f"{base}/console/link", data=fields)
        assert signed.status == 200 and signed.url.path == f"/console/chat/{CHAT_A}"
        page = await http.get(f"{base}{chat_url(CHAT_A, 'settings')}")
        csrf = CSRF.search(await page.text())
        assert csrf is not None
        refused = await http.post(
            f"{base}{chat_url(CHAT_A, 'settings')}",
            data={"csrf": csrf.group(1), "key": "daily_token_budget", "value": "1"},
        )
        assert refused.status == 400
        assert "daily_token_budget can only be changed by an operator" in await refused.text()
    assert "daily_token_budget" not in await app.services.store.get_chat_settings(CHAT_A)


async def test_overview_and_chat_page_warn_when_pins_outgrow_the_memory_cap(
    proxied: tuple[App, str],
) -> None:
    app, base = proxied
    services = app.services
    cap = services.compaction_settings(await services.settings_for(CHAT_A)).memory_cap_tokens
    pin = "Rule {i}: never ship crate {i} before the signed customs form reaches Grace, today."
    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        await _sign_in(http, base, "http")
        assert "Must-show memory" not in await (await http.get(f"{base}/console/")).text()
        for i in range(cap // services.counter.count_text(pin.format(i=0)) + 1):
            await services.store.add_pin(CHAT_A, pin.format(i=i), "alice")
        overview = await (await http.get(f"{base}/console/")).text()
        chat = await (await http.get(f"{base}{chat_url(CHAT_A)}")).text()
    assert f"over the cap of {cap:,}" in overview
    assert f"cap of {cap:,}: the summary shows what fits" in chat


async def test_the_overview_counts_a_chats_threads_against_its_daily_budget(
    proxied: tuple[App, str],
) -> None:
    app, base = proxied
    store = app.services.store
    thread = f"{CHAT_A}:topic:7"
    await store.upsert_chat(thread, "telegram", parent_key=CHAT_A)

    async def spent(http: aiohttp.ClientSession) -> int:
        page = await (await http.get(f"{base}/console/")).text()
        first = re.search(r"([0-9,]+) of 2,000,000 tokens", page)  # the seeded chat's row
        assert first is not None
        return int(first.group(1).replace(",", ""))

    async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
        await _sign_in(http, base, "http")
        before = await spent(http)
        await store.add_usage(CHAT_A, "u1", "reply", 1_000, 234)
        await store.add_usage(thread, "u2", "reply", 40_000, 1_000)
        assert await spent(http) == before + 42_234

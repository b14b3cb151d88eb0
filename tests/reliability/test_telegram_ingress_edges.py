"""Telegram ingress at its edges: huge and malformed webhook bodies, lone surrogates, updates
the library cannot parse, chat types it does not know."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from compactbot.adapters.telegram import TelegramPlatform
from compactbot.bot.app import App
from tests.fakes.fixtures import fake_telegram, free_port  # noqa: F401  (pytest fixtures)
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.telegram_wire import post_webhook_update
from tests.harness import make_config, running_app
from tests.reliability.polling_kills import bot_env

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")

SECRET = "the-Real-secret_42"
HOOK_PATH = "/tg/hook"
HUGE_BODY_BYTES = 90 * 1024 * 1024
CONCURRENT_HUGE_BODIES = 8
CHUNK_BYTES = 1024 * 1024
RSS_GROWTH_LIMIT_KB = 20 * 1024
WAIT_SECONDS = 10.0


async def until(condition: Callable[[], Any], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not await condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.01)


def webhook_env(port: int) -> dict[str, str]:
    return {
        "TELEGRAM_WEBHOOK_URL": f"https://bot.example.invalid{HOOK_PATH}",
        "TELEGRAM_WEBHOOK_LISTEN": f"127.0.0.1:{port}",
        "TELEGRAM_WEBHOOK_SECRET": SECRET,
    }


@contextlib.asynccontextmanager
async def telegram_bot(
    tmp_path: Path, tg: FakeTelegram, env: dict[str, str] | None = None
) -> AsyncIterator[App]:
    platform_env = {"TELEGRAM_BOT_TOKEN": tg.token, "TELEGRAM_API_BASE_URL": tg.base_url}
    config = make_config(tmp_path, platform_env | (env or {}))
    async with running_app(config) as app:
        platform = TelegramPlatform(config, app.gateway)
        await platform.start()
        try:
            yield app
        finally:
            await platform.stop()


async def stored_texts(app: App, chat_key: str) -> list[str]:
    return [r.text for r in await app.services.store.load_history(chat_key) if r.role == "user"]


async def post_raw(url: str, body: bytes, *, secret: str | None = SECRET) -> int:
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers["X-Telegram-Bot-Api-Secret-Token"] = secret
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, data=body, headers=headers) as response,
    ):
        return response.status


RESET = 0  # the server hung up before its answer was read (Linux drops it on a reset)


async def post_huge(port: int, *, secret: str | None) -> tuple[int, int]:
    """Declare a 90 MB body and send it 1 MB at a time until the server answers: (status, sent).

    The server answers and closes without reading the body; when the close (a reset, as data is
    still coming) overtakes the answer, the status is RESET: refused all the same."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head = (
        f"POST {HOOK_PATH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        f"Content-Length: {HUGE_BODY_BYTES}\r\n"
        + (f"X-Telegram-Bot-Api-Secret-Token: {secret}\r\n" if secret else "")
        + "\r\n"
    )
    writer.write(head.encode())
    status_line = asyncio.ensure_future(reader.readline())
    chunk = b" " * CHUNK_BYTES
    sent = 0
    try:
        while sent < HUGE_BODY_BYTES and not status_line.done():
            writer.write(chunk)
            await writer.drain()
            sent += CHUNK_BYTES
            # drain() returns without yielding while the socket takes data, so let the reader
            # see an early answer, as a client reading its response while it sends would.
            await asyncio.sleep(0)
    except ConnectionError:
        pass  # the server hung up on the refused body, as it should
    try:
        line = await asyncio.wait_for(status_line, WAIT_SECONDS)
    except ConnectionResetError:
        return RESET, sent
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
    return int(line.split()[1]), sent


def peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM in /proc status")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
async def test_ninety_megabyte_unauthenticated_webhook_bodies_are_refused_before_being_read(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    free_port: int,  # noqa: F811
) -> None:
    env = bot_env(fake_telegram, tmp_path / "bot.db") | webhook_env(free_port)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "compactbot.bot",
        "run",
        cwd=tmp_path,
        env=env,
        stderr=asyncio.subprocess.PIPE,
    )
    try:

        async def webhook_set() -> bool:
            return bool(fake_telegram.webhook)

        await until(webhook_set, "setWebhook")
        before = peak_rss_kb(process.pid)
        results = await asyncio.gather(
            *(post_huge(free_port, secret=None) for _ in range(CONCURRENT_HUGE_BODIES))
        )
        oversized = await post_huge(free_port, secret=SECRET)
        growth = peak_rss_kb(process.pid) - before
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), WAIT_SECONDS) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()

    assert {status for status, _ in results} <= {403, RESET}
    assert 403 in {status for status, _ in results}
    assert all(sent < HUGE_BODY_BYTES for _, sent in results)
    assert oversized[0] in (413, RESET) and oversized[1] < HUGE_BODY_BYTES
    assert growth < RSS_GROWTH_LIMIT_KB, f"peak RSS grew by {growth} KB"


async def test_malformed_webhook_json_gets_400_and_one_truncated_log_line(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    free_port: int,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"http://127.0.0.1:{free_port}{HOOK_PATH}"
    garbage = b'{"update_id": 1, "message": ' + b"x" * 1_500_000
    async with telegram_bot(tmp_path, fake_telegram, webhook_env(free_port)) as app:
        assert await post_raw(url, garbage, secret="wrong") == 403
        assert await post_raw(url, garbage) == 400
        assert await post_raw(url, b"\xff\xfe not even utf-8") == 400
        good = fake_telegram.group_message("still listening")
        assert await post_webhook_update(url, good, secret=SECRET) == 200
        assert await stored_texts(app, "telegram:-1001") == ["[Alice] still listening"]

    malformed = [r for r in caplog.records if "malformed JSON" in r.getMessage()]
    assert len(malformed) == 2
    assert max(len(r.getMessage()) for r in caplog.records) < 1_000


async def test_lone_surrogate_update_is_stored_repaired(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    update = fake_telegram.group_message("broken \ud800 pair \udfff end")
    update["message"]["from"]["first_name"] = "Ev\udbffe"
    async with telegram_bot(tmp_path, fake_telegram) as app:
        fake_telegram.push_update(update)

        async def stored() -> bool:
            return bool(await stored_texts(app, "telegram:-1001"))

        await until(stored, "the update to be stored")
        texts = await stored_texts(app, "telegram:-1001")

    assert texts == ["[Ev\ufffde] broken \ufffd pair \ufffd end"]


async def test_unparseable_update_is_dead_lettered_once_and_polling_continues(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    free_port: int,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    bad = {"update_id": fake_telegram.next_update_id(), "message": {"chat": "x" * 5000}}
    async with telegram_bot(tmp_path, fake_telegram) as app:
        fake_telegram.push_update(bad)
        fake_telegram.push_update(fake_telegram.group_message("after the bad one"))

        async def drained() -> bool:
            return fake_telegram.unconfirmed == 0 and bool(
                await stored_texts(app, "telegram:-1001")
            )

        await until(drained, "polling past the bad update")
        letters = await app.services.store.list_dead_letters()
        assert await stored_texts(app, "telegram:-1001") == ["[Alice] after the bad one"]
        # The same bad update delivered again (Telegram redelivers what was not confirmed).
        fake_telegram.push_update(bad | {"update_id": fake_telegram.next_update_id()})
        fake_telegram.push_update(bad)

        async def both_seen() -> bool:
            return len(await app.services.store.list_dead_letters()) == 2

        await until(both_seen, "the second bad update")

    assert [(d.platform, d.update_id) for d in letters] == [("telegram", str(bad["update_id"]))]
    assert "unparseable" in letters[0].error and len(letters[0].payload) > 1000
    logged = [r for r in caplog.records if "dead-lettered" in r.getMessage()]
    assert len(logged) == 2  # one per distinct bad update, not one per delivery
    assert all(len(r.getMessage()) < 1_000 and not r.exc_info for r in logged)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_unknown_chat_type_is_treated_as_a_group_where_only_admins_command(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    update = fake_telegram.group_message("/new", user_id=5)
    update["message"]["chat"]["type"] = "some_future_type"
    async with telegram_bot(tmp_path, fake_telegram) as app:
        fake_telegram.push_update(update)
        reply = await asyncio.wait_for(fake_telegram.sent.get(), WAIT_SECONDS)
        chat = await app.services.store.get_chat("telegram:-1001")

    assert chat is not None and chat.is_group
    assert fake_telegram.calls_to("getChatMember")
    assert "admin" in reply.text.lower()


async def test_chunked_webhook_body_without_a_length_is_cut_off_at_the_limit(
    tmp_path: Path,
    fake_telegram: FakeTelegram,  # noqa: F811
    free_port: int,  # noqa: F811
) -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"update_id": 1, "message": "'
        for _ in range(8):
            yield b"x" * CHUNK_BYTES

    url = f"http://127.0.0.1:{free_port}{HOOK_PATH}"
    headers = {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "application/json"}
    async with telegram_bot(tmp_path, fake_telegram, webhook_env(free_port)) as app:
        async with (
            aiohttp.ClientSession() as session,
            session.post(url, data=chunks(), headers=headers) as response,
        ):
            status = response.status
        assert await app.services.store.list_dead_letters() == []

    assert status == 413

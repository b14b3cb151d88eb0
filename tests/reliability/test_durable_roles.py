"""End to end on one PostgreSQL schema: one `compactbot ingress`, two `compactbot worker`.

The fake Bot API's updates reach the ingress as Telegram delivers webhooks: each chat's in order,
retried until a 200, some of them delivered again later (duplicates). Mid-run the ingress is
killed with SIGKILL and restarted (deliveries in flight fail and are retried), and one worker is
stopped and replaced. Every addressed message must be answered exactly once, in order per chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import signal
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from tests import postgres_server
from tests.fakes.openai_server import FakeOpenAI, Reply
from tests.fakes.telegram_server import FakeTelegram
from tests.harness import endpoint_env

REPO_ROOT = Path(__file__).resolve().parents[2]
SECRET = "durable-Secret_7"
HOOK_PATH = "/tg/hook"
CHATS = 4
PER_CHAT = 8
DUPLICATE_SHARE = 0.3
SEED = 20261201
ANSWER_SECONDS = 90.0
_QUESTION = re.compile(r"Q(\d+)x(\d+)Q")
_FOREIGN_PREFIXES = ("OPENAI_", "COMPACTBOT_", "TELEGRAM_", "DISCORD_")

pytestmark = pytest.mark.filterwarnings("ignore::telegram.warnings.PTBDeprecationWarning")


def answer_for(body: dict[str, Any]) -> Reply:
    """The reply names the question it answers: the last user message of the request."""
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            found = _QUESTION.findall(str(message.get("content")))
            if found:
                chat, n = found[-1]
                return Reply(f"A{chat}x{n}A")
    return Reply("no question")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Roles:
    """The processes of the test, each logging to its own file."""

    def __init__(self, workdir: Path, env: dict[str, str]) -> None:
        self._workdir = workdir
        self._env = env
        self._count = 0
        self.processes: list[asyncio.subprocess.Process] = []
        self.tasks: list[asyncio.Task[None]] = []

    async def start(self, role: str) -> asyncio.subprocess.Process:
        self._count += 1
        # A local file, opened once per process start: blocking for no noticeable time.
        log = open(self._workdir / f"{role}-{self._count}.log", "wb")  # noqa: ASYNC230, SIM115
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot",
            role,
            stdout=log,
            stderr=log,
            cwd=self._workdir,
            env=self._env,
        )
        log.close()
        self.processes.append(process)
        return process

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for process in self.processes:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                await asyncio.wait_for(process.wait(), 15)
            except TimeoutError:
                process.kill()
                await process.wait()

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
            for p in sorted(self._workdir.glob("*.log"))
        )


@contextlib.asynccontextmanager
async def roles(workdir: Path, env: dict[str, str]) -> AsyncIterator[Roles]:
    running = Roles(workdir, env)
    try:
        yield running
    finally:
        await running.close()


async def deliver(session: aiohttp.ClientSession, url: str, update: dict[str, Any]) -> int:
    """Deliver like Telegram: retried until the endpoint answers 200; the number of tries."""
    tries = 0
    while True:
        tries += 1
        try:
            async with session.post(
                url, json=update, headers={"X-Telegram-Bot-Api-Secret-Token": SECRET}
            ) as response:
                if response.status == 200:
                    return tries
        except (aiohttp.ClientError, TimeoutError):
            pass
        await asyncio.sleep(0.05)


async def test_two_workers_and_an_ingress_answer_every_question_once_in_order(
    tmp_path: Path,
) -> None:
    server = postgres_server.require_server()
    rng = random.Random(SEED)
    port = free_port()
    url = f"http://127.0.0.1:{port}{HOOK_PATH}"
    async with (
        postgres_server.fresh_schema(server) as dsn,
        FakeTelegram() as telegram,
        FakeOpenAI(answer_for) as model,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
        env |= endpoint_env(model.base_url) | {
            "PYTHONPATH": str(REPO_ROOT),
            "COMPACTBOT_DB": dsn,
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "TELEGRAM_API_BASE_URL": telegram.base_url,
            "TELEGRAM_WEBHOOK_URL": f"https://bot.example.invalid{HOOK_PATH}",
            "TELEGRAM_WEBHOOK_LISTEN": f"127.0.0.1:{port}",
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
        }
        updates = {
            chat: [
                telegram.group_message(
                    f"Q{chat}x{n}Q please",
                    chat_id=-1000 - chat,
                    mention_bot=True,
                    user_id=100 * chat + n + 1,
                )
                for n in range(PER_CHAT)
            ]
            for chat in range(CHATS)
        }
        async with roles(tmp_path, env) as procs, aiohttp.ClientSession() as session:
            ingress = await procs.start("ingress")
            workers = [await procs.start("worker"), await procs.start("worker")]
            tries: list[int] = []

            async def feed(chat: int) -> None:
                for n, update in enumerate(updates[chat]):
                    tries.append(await deliver(session, url, update))
                    if n and rng.random() < DUPLICATE_SHARE:
                        tries.append(await deliver(session, url, updates[chat][n - 1]))
                    await asyncio.sleep(0.2)

            feeders = [asyncio.create_task(feed(chat)) for chat in range(CHATS)]
            procs.tasks.extend(feeders)
            await until(lambda: len(tries) >= CHATS * PER_CHAT // 3, procs)
            ingress.kill()  # deliveries in flight now fail, and are retried
            await ingress.wait()
            await procs.start("ingress")
            await until(lambda: bool(telegram.sent_log), procs)
            workers[0].send_signal(signal.SIGTERM)  # its running turns go back to the queue
            await workers[0].wait()
            await procs.start("worker")
            await asyncio.gather(*feeders)

            expected = {chat: [f"A{chat}x{n}A" for n in range(PER_CHAT)] for chat in range(CHATS)}
            await until(lambda: answered(telegram) == expected, procs, ANSWER_SECONDS)
            await asyncio.sleep(1.0)  # a duplicate answer would show up now
            assert answered(telegram) == expected, procs.logs()
            assert sum(tries) > CHATS * PER_CHAT  # duplicates and retries really happened
            assert len(tries) > CHATS * PER_CHAT
        conn = await asyncpg.connect(dsn)
        try:
            open_jobs = await conn.fetchval("SELECT count(*) FROM turn_inbox WHERE state <> 'done'")
            states = await conn.fetch("SELECT state, count(*) FROM reply_outbox GROUP BY state")
        finally:
            await conn.close()
        assert open_jobs == 0
        assert dict(states) == {"sent": CHATS * PER_CHAT}


async def until(condition: Callable[[], bool], procs: Roles, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, procs.logs()
        await asyncio.sleep(0.05)


def answered(telegram: FakeTelegram) -> dict[int, list[str]]:
    replies: dict[int, list[str]] = defaultdict(list)
    for sent in telegram.sent_log:
        replies[-1000 - sent.chat_id].append(sent.text)
    return dict(replies)

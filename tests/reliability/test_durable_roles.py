"""End to end on one PostgreSQL schema: one `compactbot ingress`, two `compactbot worker`.

The fake Bot API's updates reach the ingress as Telegram delivers webhooks: each chat's in order,
retried until a 200, some of them delivered again later (duplicates). Mid-run the ingress is
killed with SIGKILL and restarted (deliveries in flight fail and are retried); the worker whose
turn hangs at the model is killed with SIGKILL mid-turn (another takes the turn over after its
lease), and the other is stopped with SIGTERM and replaced. Every addressed message gets exactly
one reply, in order per chat, delivered once; the one exception allowed is a send the killed
worker had begun, which is `unknown` and never repeated (SPEC 15).
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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest

from tests import postgres_server
from tests.fakes.openai_server import FakeOpenAI, Hang, Reply
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
LEASE_SECONDS = 3
STUCK = "Q1x3Q"
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
    stuck = Stuck(asyncio.Event())
    async with (
        postgres_server.fresh_schema(server) as dsn,
        FakeTelegram() as telegram,
        FakeOpenAI(stuck.respond) as model,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
        env |= endpoint_env(model.base_url) | {
            "PYTHONPATH": str(REPO_ROOT),
            "COMPACTBOT_DB": dsn,
            "COMPACTBOT_TURN_LEASE_SECONDS": str(LEASE_SECONDS),
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

            # The worker answering STUCK is mid-turn (its model call hangs): it dies, and the
            # other worker takes the turn over once the lease runs out.
            await asyncio.wait_for(stuck.asked.wait(), 60)
            holder = await holder_of(dsn, STUCK)
            [crashed] = [w for w in workers if f":{w.pid}:" in holder]
            crashed.kill()
            await crashed.wait()
            survivor = next(w for w in workers if w is not crashed)
            await procs.start("worker")
            await until(lambda: bool(telegram.sent_log), procs)
            survivor.send_signal(signal.SIGTERM)  # its running turns go back to the queue
            await survivor.wait()
            await procs.start("worker")
            await asyncio.gather(*feeders)

            await settled(dsn, procs)
            await asyncio.sleep(LEASE_SECONDS)  # a duplicate answer would show up now
            assert len(tries) > CHATS * PER_CHAT  # duplicates were delivered
            assert sum(tries) > len(tries)  # and deliveries were retried
        conn = await asyncpg.connect(dsn)
        try:
            outbox = await conn.fetch("SELECT chat_key, text, state FROM reply_outbox ORDER BY id")
            attempts = await conn.fetchval(
                "SELECT attempts FROM turn_inbox WHERE payload->'message'->>'text' LIKE $1",
                f"%{STUCK}%",
            )
        finally:
            await conn.close()
    assert attempts == 2  # claimed by the worker that died, then by the one that answered
    # One reply per question; only a send the killed worker had begun may be `unknown` (sent or
    # not, it is never repeated), and the other chats' and turns' replies are all sent.
    assert sorted(r["text"] for r in outbox) == sorted(
        f"A{chat}x{n}A" for chat in range(CHATS) for n in range(PER_CHAT)
    )
    unknown = [r for r in outbox if r["state"] == "unknown"]
    assert len(unknown) <= 1 and all(r["state"] in ("sent", "unknown") for r in outbox)
    got = answered(telegram)
    expected = {chat: [f"A{chat}x{n}A" for n in range(PER_CHAT)] for chat in range(CHATS)}
    for row in unknown:
        chat = -1000 - int(row["chat_key"].split(":")[1])
        if row["text"] not in got.get(chat, []):
            expected[chat].remove(row["text"])  # it never reached the chat
    assert got == expected


async def settled(dsn: str, procs: Roles) -> None:
    """Every question's job is done and every reply has its outcome."""
    conn = await asyncpg.connect(dsn)
    try:
        deadline = time.monotonic() + ANSWER_SECONDS
        while True:
            row = await conn.fetchrow(
                "SELECT (SELECT count(*) FROM turn_inbox WHERE state <> 'done') AS open,"
                " (SELECT count(*) FROM reply_outbox WHERE state IN ('sent', 'unknown'))"
                " AS settled"
            )
            if row["open"] == 0 and row["settled"] == CHATS * PER_CHAT:
                return
            assert time.monotonic() < deadline, procs.logs()
            await asyncio.sleep(0.1)
    finally:
        await conn.close()


@dataclass
class Stuck:
    """The model hangs the first time it is asked STUCK, and says when that happened."""

    asked: asyncio.Event

    def respond(self, body: dict[str, Any]) -> Reply | Hang:
        reply = answer_for(body)
        if reply.text == STUCK.replace("Q", "A") and not self.asked.is_set():
            self.asked.set()
            return Hang(120.0)
        return reply


async def holder_of(dsn: str, text: str) -> str:
    conn = await asyncpg.connect(dsn)
    try:
        holder = await conn.fetchval(
            "SELECT holder FROM turn_inbox"
            " WHERE state = 'doing' AND payload->'message'->>'text' LIKE $1",
            f"%{text}%",
        )
    finally:
        await conn.close()
    assert holder is not None
    return str(holder)


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

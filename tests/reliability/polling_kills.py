"""SIGKILL rounds against `compactbot run` polling the fake Bot API under load.

Updates for several group chats arrive all the time; each round starts a real `compactbot run`
(forked by `run_zygote`), lets it poll for a random moment and kills it with SIGKILL. A last
process drains what is left and stops with SIGTERM. `kill_rounds` then reads the database: every
update the fake handed out must be stored exactly once, in order within its chat. The test and
`python -m bench.polling_soak` share this.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import signal
import sqlite3
import sys
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from tests.fakes.telegram_server import FakeTelegram

REPO_ROOT = Path(__file__).resolve().parents[2]
TOKEN = "123456789:AAtestTokenForTheFakeBotApi_0123456789"
READY_SECONDS = 30.0
DRAIN_SECONDS = 60.0
POLL_SECONDS = 0.01
_UPDATE_TAG = re.compile(r"\bu(\d+)\b")
# Settings from the caller's environment that would point the bot elsewhere.
_FOREIGN_PREFIXES = ("OPENAI_", "COMPACTBOT_", "TELEGRAM_", "DISCORD_")


@dataclass(frozen=True, slots=True)
class KillPlan:
    rounds: int = 30
    seed: int = 20261201
    chats: int = 4
    preload: int = 400  # updates waiting before the first start (catching up after downtime)
    per_tick: int = 4  # then this many more every tick, while the rounds run
    tick_seconds: float = 0.02
    max_kill_delay_seconds: float = 0.4


@dataclass(slots=True)
class KillOutcome:
    pushed: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    stored: dict[int, list[int]] = field(default_factory=lambda: defaultdict(list))
    kills: int = 0
    seconds: float = 0.0

    @property
    def total_pushed(self) -> int:
        return sum(len(ids) for ids in self.pushed.values())

    def lost(self) -> set[int]:
        stored = {u for ids in self.stored.values() for u in ids}
        return {u for ids in self.pushed.values() for u in ids} - stored

    def duplicated(self) -> int:
        return sum(len(ids) - len(set(ids)) for ids in self.stored.values())

    def out_of_order_chats(self) -> list[int]:
        return [chat for chat, ids in self.stored.items() if ids != sorted(ids)]


class Zygote:
    """The `run_zygote` process: spawns and reaps `compactbot run` children on request."""

    def __init__(self, process: asyncio.subprocess.Process, log_path: Path) -> None:
        self._process = process
        self._log_path = log_path

    async def _ask(self, line: str) -> str:
        assert self._process.stdin is not None and self._process.stdout is not None
        self._process.stdin.write(f"{line}\n".encode())
        await self._process.stdin.drain()
        answer = await asyncio.wait_for(self._process.stdout.readline(), READY_SECONDS)
        assert answer, "run_zygote exited"
        return answer.decode().strip()

    async def spawn(self) -> int:
        answer = await self._ask(f"spawn run {self._log_path}")
        return int(answer.removeprefix("spawned "))

    async def wait(self, pid: int) -> int:
        return int((await self._ask(f"wait {pid}")).rsplit(" ", 1)[1])


def bot_env(fake: FakeTelegram, db: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
    return env | {
        "PYTHONPATH": str(REPO_ROOT),
        "TELEGRAM_BOT_TOKEN": fake.token,
        "TELEGRAM_API_BASE_URL": fake.base_url,
        "COMPACTBOT_DB": str(db),
    }


@contextlib.asynccontextmanager
async def zygote(workdir: Path, env: dict[str, str]) -> AsyncIterator[Zygote]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.reliability.run_zygote",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        cwd=workdir,
        env=env,
    )
    try:
        yield Zygote(process, workdir / "bot.log")
    finally:
        if process.stdin is not None:
            process.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()


async def _until(condition: object, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(POLL_SECONDS)


async def _start(zyg: Zygote, fake: FakeTelegram) -> int:
    polls = len(fake.calls_to("getUpdates"))
    pid = await zyg.spawn()
    await _until(lambda: len(fake.calls_to("getUpdates")) > polls, READY_SECONDS, "polling")
    return pid


def _push(fake: FakeTelegram, outcome: KillOutcome, rng: random.Random, plan: KillPlan) -> None:
    chat = rng.randrange(plan.chats)
    update_id = fake.next_update_id()
    fake.push_update(
        fake.group_message(
            f"u{update_id} in chat {chat}",
            chat_id=-1000 - chat,
            user_id=1 + update_id % 3,
            update_id=update_id,
        )
    )
    outcome.pushed[chat].append(update_id)


def _stored(db: Path) -> dict[int, list[int]]:
    found: dict[int, list[int]] = defaultdict(list)
    with contextlib.closing(sqlite3.connect(f"file:{db}?mode=ro", uri=True)) as conn:
        rows = conn.execute(
            "SELECT s.chat_key, m.content FROM messages m JOIN sessions s ON s.id = m.session_id"
            " WHERE m.role = 'user' ORDER BY m.id"
        ).fetchall()
    for chat_key, content in rows:
        tag = _UPDATE_TAG.search(content or "")
        if tag is not None:
            found[-1000 - int(chat_key.rsplit(":", 1)[1])].append(int(tag.group(1)))
    return found


async def kill_rounds(workdir: Path, plan: KillPlan) -> KillOutcome:
    rng = random.Random(plan.seed)
    outcome = KillOutcome()
    started = time.monotonic()
    db = workdir / "data" / "bot.db"
    async with FakeTelegram(token=TOKEN) as fake:
        for _ in range(plan.preload):
            _push(fake, outcome, rng, plan)

        async def keep_pushing() -> None:
            while True:
                for _ in range(plan.per_tick):
                    _push(fake, outcome, rng, plan)
                await asyncio.sleep(plan.tick_seconds)

        async with zygote(workdir, bot_env(fake, db)) as zyg:
            pusher = asyncio.create_task(keep_pushing())
            try:
                for _ in range(plan.rounds):
                    pid = await _start(zyg, fake)
                    await asyncio.sleep(rng.uniform(0, plan.max_kill_delay_seconds))
                    os.kill(pid, signal.SIGKILL)
                    assert await zyg.wait(pid) == -signal.SIGKILL
                    outcome.kills += 1
            finally:
                pusher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await pusher
            pid = await _start(zyg, fake)
            await _until(lambda: fake.unconfirmed == 0, DRAIN_SECONDS, "the backlog to drain")
            os.kill(pid, signal.SIGTERM)
            assert await zyg.wait(pid) == 0, (workdir / "bot.log").read_text()[-2000:]
    outcome.stored = _stored(db)
    outcome.seconds = time.monotonic() - started
    return outcome

"""The PostgreSQL soak's surroundings: a fresh schema, the fake Bot API and model, the bot's env."""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import yaml

from bench.service import UNLIMITED
from bench.soak_pg_feed import HOOK_PATH, SECRET, ModelResponder
from tests import postgres_server
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.telegram_server import FakeTelegram
from tests.harness import endpoint_env

REPO_ROOT = Path(__file__).resolve().parents[1]
# Settings from the caller's environment that would point the bot elsewhere.
_FOREIGN_PREFIXES = ("OPENAI_", "COMPACTBOT_", "TELEGRAM_", "DISCORD_")


class NoDatabase(Exception):
    """The PostgreSQL server is not reachable (one line)."""


@contextlib.asynccontextmanager
async def database() -> AsyncIterator[str]:
    """A fresh schema on the test server (COMPACTBOT_TEST_PG_DSN), dropped afterwards."""
    dsn = postgres_server.base_dsn()
    try:
        conn = await asyncpg.connect(dsn, timeout=postgres_server.CONNECT_TIMEOUT_SECONDS)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as err:
        raise NoDatabase(f"PostgreSQL not reachable ({type(err).__name__})") from None
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
    finally:
        await conn.close()
    async with postgres_server.fresh_schema(dsn) as schema_dsn:
        yield schema_dsn


@dataclass(frozen=True, slots=True)
class Servers:
    telegram: FakeTelegram
    model: FakeOpenAI
    hook_url: str
    env: dict[str, str]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.asynccontextmanager
async def servers(
    workdir: Path,
    dsn: str,
    responder: ModelResponder,
    *,
    context_length: int,
    protect_last_n: int,
    turn_lease_seconds: float,
) -> AsyncIterator[Servers]:
    """The fakes on 127.0.0.1 and the environment every bot process of the run gets."""
    config = workdir / "soak-config.yaml"
    settings = {
        # Every chat's regulars ask often: a rate limit or budget would refuse the soak's questions.
        "gateway": {**UNLIMITED, "turn_lease_seconds": turn_lease_seconds},
        "compression": {"protect_last_n": protect_last_n},
    }
    config.write_text(yaml.safe_dump(settings))
    port = free_port()
    async with FakeTelegram() as telegram, FakeOpenAI(responder) as model:
        telegram.can_read_all_group_messages = True  # privacy off: the group's talk arrives
        env = {k: v for k, v in os.environ.items() if not k.startswith(_FOREIGN_PREFIXES)}
        env |= endpoint_env(model.base_url, context_length=context_length) | {
            "PYTHONPATH": str(REPO_ROOT),
            "COMPACTBOT_DB": dsn,
            "COMPACTBOT_CONFIG": str(config),
            "TELEGRAM_BOT_TOKEN": telegram.token,
            "TELEGRAM_API_BASE_URL": telegram.base_url,
            "TELEGRAM_WEBHOOK_URL": f"https://bot.example.invalid{HOOK_PATH}",
            "TELEGRAM_WEBHOOK_LISTEN": f"127.0.0.1:{port}",
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
        }
        yield Servers(telegram, model, f"http://127.0.0.1:{port}{HOOK_PATH}", env)

"""The test PostgreSQL: found once per run, one fresh schema per store; skipped when unreachable.

`COMPACTBOT_TEST_PG_DSN` names the server (default: the local one, trust auth). Without a reachable
server the PostgreSQL cases skip with one line; with `COMPACTBOT_REQUIRE_PG=1` (CI) they fail.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from urllib.parse import parse_qsl, urlencode, urlsplit

import asyncpg
import pytest

from compactbot.bot.store.postgres.database import redacted_dsn

DSN_ENV = "COMPACTBOT_TEST_PG_DSN"
REQUIRE_ENV = "COMPACTBOT_REQUIRE_PG"
DEFAULT_DSN = "postgresql://root@127.0.0.1:5432/test"
CONNECT_TIMEOUT_SECONDS = 3.0


def base_dsn() -> str:
    return os.environ.get(DSN_ENV) or DEFAULT_DSN


def required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


async def _probe(dsn: str) -> str | None:
    """None when the server answers and has pg_trgm, else why not (one line)."""
    try:
        conn = await asyncpg.connect(dsn, timeout=CONNECT_TIMEOUT_SECONDS)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError) as err:
        return f"PostgreSQL not reachable at {redacted_dsn(dsn)} ({type(err).__name__})"
    try:
        # Once, in the shared schema: the per-test schemas find its operator classes there.
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
    except asyncpg.PostgresError as err:
        return f"PostgreSQL at {redacted_dsn(dsn)} cannot create pg_trgm ({err})"
    finally:
        await conn.close()
    return None


_probed: dict[str, str | None] = {}


def require_server() -> str:
    """The base DSN of a usable server; skips (or, when required, fails) the test otherwise."""
    dsn = base_dsn()
    if dsn not in _probed:
        # Its own thread and loop: callable from sync fixtures and from inside a running loop.
        with ThreadPoolExecutor(max_workers=1) as probe:
            _probed[dsn] = probe.submit(asyncio.run, _probe(dsn)).result()
    reason = _probed[dsn]
    if reason is not None:
        if required():
            pytest.fail(f"{reason}; {REQUIRE_ENV}=1 makes this a failure", pytrace=False)
        pytest.skip(reason)
    return dsn


def with_search_path(dsn: str, schema: str) -> str:
    """`dsn` whose connections use `schema` first, then public (where pg_trgm lives)."""
    parts = urlsplit(dsn)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "search_path"]
    query.append(("search_path", f"{schema},public"))
    return parts._replace(query=urlencode(query)).geturl()


@asynccontextmanager
async def fresh_schema(dsn: str) -> AsyncIterator[str]:
    """A new empty schema for one store, dropped afterwards; yields the DSN that selects it."""
    schema = f"test_{uuid.uuid4().hex[:12]}"
    conn = await asyncpg.connect(dsn, timeout=CONNECT_TIMEOUT_SECONDS)
    try:
        await conn.execute(f"CREATE SCHEMA {schema}")
        try:
            yield with_search_path(dsn, schema)
        finally:
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")
    finally:
        await conn.close()

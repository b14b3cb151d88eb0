"""What only the PostgreSQL backend has: its migrations, several workers on one schema, the CJK
ctype check, and a DSN whose password never reaches a message."""

from __future__ import annotations

import asyncio
import logging
import random
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import urlsplit

import asyncpg
import pytest

from compactbot.bot.store import NewMessage, PostgresStore, StoreError
from compactbot.bot.store.postgres.database import redacted_dsn
from compactbot.bot.store.postgres.schema.migrate import apply_migrations, schema_version
from compactbot.bot.store.postgres.schema.migrations import (
    LATEST_VERSION,
    MIGRATIONS,
)
from compactbot.compression.message_hints import message_hints
from tests import postgres_server
from tests.store.conftest import ManualClock
from tests.store.factories import summary, user

PASSWORD = "s3cret-pass"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def server() -> str:
    return postgres_server.require_server()


@pytest.fixture
async def schema_dsn(server: str) -> AsyncIterator[str]:
    async with postgres_server.fresh_schema(server) as dsn:
        yield dsn


async def test_schema_at_version_one_is_migrated_without_loss(schema_dsn: str) -> None:
    conn = await asyncpg.connect(schema_dsn)
    try:
        assert await apply_migrations(conn, up_to=1) == 1
        await conn.execute(
            "INSERT INTO chats(key, platform, created_at) VALUES ('console:old', 'console', 1);"
            "INSERT INTO sessions(chat_key, started_at, last_activity_at, active_tokens,"
            " active_messages) VALUES ('console:old', 1, 1, 9, 1);"
            "INSERT INTO messages(session_id, seq, role, content, tokens, created_at, search_text)"
            " VALUES (1, 1, 'user', 'written by version one', 9, 1, 'written by version one')"
        )
        assert await conn.fetchval("SELECT to_regclass('messages_session_active')") is None
    finally:
        await conn.close()

    async with PostgresStore(schema_dsn) as store:
        [session] = await store.list_sessions("console:old")
        hits = await store.search("console:old", "version one")
        assert [m.text for m in await store.load_active(session.id)] == ["written by version one"]
        # The next row continues the identity, not a copy of id 1.
        assert (await store.new_session("console:old")).id == 2

    assert len(hits) == 1
    conn = await asyncpg.connect(schema_dsn)
    try:
        assert await schema_version(conn) == LATEST_VERSION
        assert await conn.fetchval("SELECT to_regclass('messages_session_active')") is not None
        versions = await conn.fetch("SELECT version FROM schema_version ORDER BY version")
    finally:
        await conn.close()
    assert [r[0] for r in versions] == [m.version for m in MIGRATIONS]


async def test_rows_from_before_migration_11_have_unknown_hints(schema_dsn: str) -> None:
    conn = await asyncpg.connect(schema_dsn)
    try:
        assert await apply_migrations(conn, up_to=10) < 11  # before the hints column
        await conn.execute(
            "INSERT INTO chats(key, platform, created_at) VALUES ('console:old', 'console', 1);"
            "INSERT INTO sessions(chat_key, started_at, last_activity_at, active_tokens,"
            " active_messages) VALUES ('console:old', 1, 1, 9, 1);"
            "INSERT INTO messages(session_id, seq, role, content, tokens, created_at, search_text)"
            " VALUES (1, 1, 'user', 'written before hints', 9, 1, 'written before hints')"
        )
    finally:
        await conn.close()
    new = {"role": "user", "content": "[alice] stored after the upgrade"}

    async with PostgresStore(schema_dsn) as store:
        [session] = await store.list_sessions("console:old")
        await store.append_messages(session.id, [NewMessage.from_openai(new, 5)])
        old, stored = await store.load_active(session.id)

    assert (old.text, old.hints) == ("written before hints", None)
    assert stored.hints == message_hints(new)


async def test_memory_entries_from_before_migration_16_have_no_author_ids(schema_dsn: str) -> None:
    conn = await asyncpg.connect(schema_dsn)
    try:
        assert await apply_migrations(conn, up_to=15) == 15
        await conn.execute(
            "INSERT INTO chats(key, platform, created_at) VALUES ('console:old', 'console', 1);"
            "INSERT INTO sessions(chat_key, started_at, last_activity_at, active_tokens,"
            " active_messages) VALUES ('console:old', 1, 1, 0, 0);"
            "INSERT INTO memory_entries(session_id, entry_id, kind, text, speaker, sources)"
            " VALUES (1, 1, 'rule', 'No deploys on Fridays.', 'Alice', '[\"7\"]')"
        )
    finally:
        await conn.close()

    async with PostgresStore(schema_dsn) as store:
        [session] = await store.list_sessions("console:old")
        [entry] = (await store.load_memory(session.id)).entries

    assert (entry.text, entry.speaker, entry.sources) == ("No deploys on Fridays.", "Alice", ("7",))
    assert entry.author_ids == ()


async def test_workers_starting_together_migrate_once(schema_dsn: str) -> None:
    stores = [PostgresStore(schema_dsn) for _ in range(3)]

    await asyncio.gather(*(s.open() for s in stores))

    try:
        conn = await asyncpg.connect(schema_dsn)
        try:
            versions = await conn.fetch("SELECT version FROM schema_version ORDER BY version")
        finally:
            await conn.close()
        # One row per migration: each applied once, whichever worker won.
        assert [r[0] for r in versions] == [m.version for m in MIGRATIONS]
    finally:
        await asyncio.gather(*(s.close() for s in stores))


async def test_two_workers_compacting_one_snapshot_apply_exactly_once(
    schema_dsn: str, clock: ManualClock
) -> None:
    async with (
        PostgresStore(schema_dsn, clock=clock) as one,
        PostgresStore(schema_dsn, clock=clock) as other,
    ):
        session = await one.active_session("console:room")
        ids = await one.append_messages(session.id, [user(f"m{i}") for i in range(10)])

        results = await asyncio.gather(
            one.archive_and_compact(session, [summary("from one", 10)], ids[-1]),
            other.archive_and_compact(session, [summary("from other", 12)], ids[-1]),
        )

        assert sum(r is not None for r in results) == 1
        after = await other.get_session(session.id)
        assert after.version == session.version + 1
        assert (after.active_tokens, after.active_messages) == await one.recount(session.id)
        assert len(await one.load_active(session.id)) == 1


async def test_two_workers_opening_a_chat_share_one_session(
    schema_dsn: str, clock: ManualClock
) -> None:
    async with (
        PostgresStore(schema_dsn, clock=clock) as one,
        PostgresStore(schema_dsn, clock=clock) as other,
    ):
        opened = await asyncio.gather(
            *(store.active_session("telegram:-5") for store in [one, other] * 5)
        )

        assert len({s.id for s in opened}) == 1


async def test_appends_from_two_workers_keep_every_row_and_the_totals(
    schema_dsn: str, clock: ManualClock
) -> None:
    async with (
        PostgresStore(schema_dsn, clock=clock) as one,
        PostgresStore(schema_dsn, clock=clock) as other,
    ):
        session = await one.active_session("console:room")

        await asyncio.gather(
            *(
                store.append_messages(session.id, [user(f"{n}-a", 2), user(f"{n}-b", 3)])
                for n, store in enumerate([one, other] * 10)
            )
        )

        active = await other.load_active(session.id)
        assert len(active) == 40
        after = await one.get_session(session.id)
        assert (after.active_tokens, after.active_messages) == (100, 40)
        assert await other.recount(session.id) == (100, 40)


async def test_a_ctype_without_cjk_trigrams_is_reported_and_search_still_finds_chinese(
    server: str, caplog: pytest.LogCaptureFixture
) -> None:
    name = f"compactbot_ctype_c_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server)
    try:
        try:
            await admin.execute(
                f"CREATE DATABASE {name} TEMPLATE template0 LC_CTYPE 'C' LC_COLLATE 'C'"
            )
        except asyncpg.InsufficientPrivilegeError:
            pytest.skip("this role may not create databases")
        dsn = urlsplit(server)._replace(path=f"/{name}").geturl()
        try:
            with caplog.at_level(logging.WARNING, logger="compactbot.bot.store.postgres.database"):
                async with PostgresStore(dsn) as store:
                    session = await store.active_session("telegram:-100")
                    await store.append_messages(session.id, [user("我们明天部署新版本")])
                    hits = await store.search("telegram:-100", "明天部署")
                    assert store.cjk_trigrams is False
        finally:
            await admin.execute(f"DROP DATABASE {name} WITH (FORCE)")
    finally:
        await admin.close()

    assert len(hits) == 1
    [warning] = [r for r in caplog.records if "CJK" in r.getMessage()]
    assert name in warning.getMessage()


async def test_this_servers_ctype_makes_cjk_trigrams(schema_dsn: str) -> None:
    async with PostgresStore(schema_dsn) as store:
        assert store.cjk_trigrams is True


def test_redacted_dsn_hides_passwords_in_the_user_part_and_the_query() -> None:
    dsn = f"postgresql://bot:{PASSWORD}@db.internal:5433/compactbot?password={PASSWORD}&x=1"

    shown = redacted_dsn(dsn)

    assert PASSWORD not in shown
    assert shown.startswith("postgresql://bot:***@db.internal:5433/compactbot?")
    assert redacted_dsn("postgresql://bot@db/compactbot") == "postgresql://bot@db/compactbot"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_server_is_one_error_without_the_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dsn = f"postgresql://bot:{PASSWORD}@127.0.0.1:{_closed_port()}/compactbot"

    with caplog.at_level(logging.DEBUG), pytest.raises(StoreError) as caught:
        await PostgresStore(dsn).open()

    assert "cannot connect to postgresql://bot:***@127.0.0.1" in str(caught.value)
    assert PASSWORD not in str(caught.value) and PASSWORD not in caplog.text


def _compactbot(*args: str, db: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compactbot.bot", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "COMPACTBOT_DB": db},
        cwd=REPO,
        timeout=120,
    )


def test_operator_commands_run_on_postgresql_when_compactbot_db_names_it(schema_dsn: str) -> None:
    assert (
        _compactbot("config", "set", "console:main", "threshold", "0.5", db=schema_dsn).returncode
        == 0
    )
    listed = _compactbot("chats", db=schema_dsn)

    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.startswith("console:main")


def test_a_console_session_on_postgresql_compacts_and_moves_to_sqlite_intact(
    schema_dsn: str, tmp_path: Path
) -> None:
    rng = random.Random(1)
    words = ["deploy", "lunch", "tests", "release", "coffee", "budget", "design", "docs", "ok"]
    chatter = "alice: line 0 about the 部署 plan\n" + "".join(
        f"{('alice', 'bob', 'carol')[i % 3]}: " + " ".join(rng.choices(words, k=25)) + "\n"
        for i in range(30)
    )
    script = chatter + "alice: /pin deploys only on Tuesdays\nalice: /compress\nalice: /pins\n"

    run = _compactbot("console", "--room", "t", "--admin", "alice", db=schema_dsn, stdin=script)

    assert run.returncode == 0, run.stderr
    assert any(line.startswith("bot: 🗜️ Compressed:") for line in run.stdout.splitlines())
    history = _compactbot("history", "console:t", "--all", db=schema_dsn)
    assert history.returncode == 0 and "line 0 about the 部署 plan" in history.stdout
    copy = tmp_path / "moved.db"
    assert _compactbot("store", "copy", schema_dsn, str(copy), db=schema_dsn).returncode == 0
    assert _compactbot("history", "console:t", "--all", db=str(copy)).stdout == history.stdout
    moved = _compactbot("console", "--room", "t", db=str(copy), stdin="alice: /pins\n")
    assert "bot: 1. deploys only on Tuesdays" in moved.stdout.splitlines()

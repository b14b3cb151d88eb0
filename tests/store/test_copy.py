"""`store copy`: a whole store moved between backends keeps every row, id, order and total."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import cast
from urllib.parse import urlsplit

import pytest

from compactbot.bot.store import CompressionEvent, NewMessage, PostgresStore, SqliteStore
from compactbot.bot.store.copying import CopyableStore, CopyRefused, copy_store, verify_copy
from compactbot.compression.memory import Memory, MemoryEntry
from compactbot.compression.state import CompressorState
from tests import postgres_server
from tests.store.conftest import ManualClock
from tests.store.factories import summary, user

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "hunter2-not-for-logs"
DIRECTIONS = [("sqlite", "postgresql"), ("postgresql", "sqlite"), ("sqlite", "sqlite")]


@pytest.fixture(params=DIRECTIONS, ids=lambda d: f"{d[0]}-to-{d[1]}")
def direction(request: pytest.FixtureRequest) -> tuple[str, str]:
    if "postgresql" in request.param:
        postgres_server.require_server()
    return cast(tuple[str, str], request.param)


@asynccontextmanager
async def _opened(backend: str, path: Path, clock: ManualClock) -> AsyncIterator[CopyableStore]:
    if backend == "sqlite":
        async with SqliteStore(path, clock=clock) as store:
            yield store
        return
    async with (
        postgres_server.fresh_schema(postgres_server.base_dsn()) as dsn,
        PostgresStore(dsn, clock=clock) as store,
    ):
        yield store


async def _fill(store: CopyableStore, clock: ManualClock) -> None:
    """A store with every kind of row: archived and live messages, state, side tables."""
    await store.upsert_chat("telegram:-100", "telegram", title="Team")
    await store.upsert_chat("telegram:-100:7", "telegram", parent_key="telegram:-100")
    first = await store.active_session("telegram:-100")
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    parts = [{"type": "text", "text": "diagram 图表"}, {"type": "image_url", "image_url": {}}]
    ids = await store.append_messages(
        first.id,
        [
            replace(user("我们明天部署新版本"), platform_message_id="41"),
            NewMessage(role="user", content=parts, tokens=900, author_id="9", author_name="Bo"),
            NewMessage(role="assistant", content=None, tokens=9, tool_calls=[call]),
            NewMessage(role="tool", content="ok", tokens=1, tool_call_id="c1", name="read"),
        ],
    )
    clock.advance(60)
    await store.append_messages(first.id, [user("arrived while summarising")])
    memory = Memory(
        (MemoryEntry(1, "fact", "Deploys on Tuesday.", sources=(str(ids[0]),)),),
        reread=(str(ids[1]), str(ids[0])),
    )
    assert await store.archive_and_compact(
        first, [summary("S: deploy tomorrow")], ids[-1], memory=memory
    )
    assert await store.edit_platform_message("telegram:-100", "41", "明天部署", 4)
    await store.save_compressor_state(
        first.id, CompressorState(compression_count=1, previous_summary="S", strikes=1)
    )
    await store.set_system_prompt(first.id, "be brief")
    await store.new_session("telegram:-100")
    per_user = await store.active_session("telegram:-100", "alice")
    hinted = NewMessage.from_openai({"role": "user", "content": "[alice] hinted"}, 4)
    private = user("private note", 3)
    note, _ = await store.append_messages(per_user.id, [private, hinted])
    # No hints, as on a row stored before migration 11.
    await store.set_message_content(note, private.content, private.tokens)
    await store.set_chat_setting("telegram:-100", "threshold", "0.5")
    await store.add_pin("telegram:-100", "deploys on Tuesdays", "alice")
    await store.add_usage("telegram:-100", "alice", "reply", 100, 10, day="2026-11-01")
    await store.add_usage("telegram:-100", None, "compression", 900, 90, day="2026-11-01")
    await store.mark_update_processed("telegram", "5001")
    await store.record_compression_event(
        CompressionEvent("telegram:-100", first.id, "manual", 1.0, 2.0, "compressed", 5, 2)
    )


async def _snapshot(store: CopyableStore) -> tuple[object, ...]:
    chat = "telegram:-100"
    return (
        await store.list_chats(),
        await store.list_sessions(),
        await store.load_history(chat),
        await store.load_history("telegram:-100:7"),
        await store.get_chat_settings(chat),
        await store.list_pins(chat),
        await store.usage(chat, "2000-01-01"),
        await store.list_compression_events(),
        [await store.load_memory(s.id) for s in await store.list_sessions()],
        [await store.message_revisions(m.id) for m in await store.load_history(chat)],
    )


async def test_copy_keeps_every_row_id_order_and_total(
    direction: tuple[str, str], tmp_path: Path, clock: ManualClock
) -> None:
    source_kind, destination_kind = direction
    async with (
        _opened(source_kind, tmp_path / "source.db", clock) as source,
        _opened(destination_kind, tmp_path / "destination.db", clock) as destination,
    ):
        await _fill(source, clock)

        report = await copy_store(source, destination)

        assert report.ok, report.mismatches
        assert {c.table: c.destination for c in report.counts}["messages"] == 8
        assert await _snapshot(destination) == await _snapshot(source)
        session = await destination.active_session("telegram:-100", "alice")
        copied = [m.hints for m in await destination.load_active(session.id)]
        assert copied[0] is None and copied[1] is not None
        hits = await destination.search("telegram:-100", "部署")
        assert [h.active for h in hits] == [False]
        assert len(await destination.search("telegram:-100", "图表")) == 1
        assert not await destination.mark_update_processed("telegram", "5001")
        # New rows continue after the copied ids, in the copied session's order.
        [new_id] = await destination.append_messages(session.id, [user("after the move")])
        assert new_id > max(m.id for m in await source.load_history("telegram:-100"))
        pin = await destination.add_pin("telegram:-100", "second", None)
        assert pin.id == 2


async def test_copy_refuses_a_destination_that_holds_data(
    direction: tuple[str, str], tmp_path: Path, clock: ManualClock
) -> None:
    source_kind, destination_kind = direction
    async with (
        _opened(source_kind, tmp_path / "source.db", clock) as source,
        _opened(destination_kind, tmp_path / "destination.db", clock) as destination,
    ):
        await _fill(source, clock)
        await destination.add_pin("console:elsewhere", "already here", None)

        with pytest.raises(CopyRefused, match="pins"):
            await copy_store(source, destination)

        assert await destination.list_chats() == []


async def test_verify_reports_totals_that_do_not_match_a_recount(
    tmp_path: Path, clock: ManualClock
) -> None:
    async with (
        SqliteStore(tmp_path / "source.db", clock=clock) as source,
        SqliteStore(tmp_path / "destination.db", clock=clock) as destination,
    ):
        await _fill(source, clock)
        assert (await copy_store(source, destination)).ok
    with sqlite3.connect(tmp_path / "destination.db") as conn:
        conn.execute("UPDATE sessions SET active_tokens = active_tokens + 1 WHERE id = 1")
        conn.execute("DELETE FROM pins")

    async with (
        SqliteStore(tmp_path / "source.db", clock=clock) as source,
        SqliteStore(tmp_path / "destination.db", clock=clock) as destination,
    ):
        report = await verify_copy(source, destination)

    assert not report.ok
    assert any(
        line.startswith("pins: 1 rows in the source, 0 copied") for line in report.mismatches
    )
    assert any("session 1: running totals" in line for line in report.mismatches)


def _cli(*args: str, log_level: str = "WARNING") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compactbot.bot", "store", "copy", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "COMPACTBOT_LOG_LEVEL": log_level},
    )


async def test_cli_copies_sqlite_to_postgresql_and_never_shows_the_password(
    tmp_path: Path, clock: ManualClock
) -> None:
    postgres_server.require_server()
    source_path = tmp_path / "source.db"
    async with SqliteStore(source_path, clock=clock) as source:
        await _fill(source, clock)
    async with postgres_server.fresh_schema(postgres_server.base_dsn()) as dsn:
        # Trust authentication ignores the password; it is there to prove it is never shown.
        parts = urlsplit(dsn)
        netloc = f"{parts.username}:{PASSWORD}@{parts.hostname}:{parts.port or 5432}"
        with_password = parts._replace(netloc=netloc).geturl()

        # DEBUG: every log line the copy can write must be free of the password too.
        copied = _cli(f"sqlite:///{source_path}", with_password, log_level="DEBUG")
        again = _cli(str(source_path), with_password, log_level="DEBUG")

    assert copied.returncode == 0, copied.stderr
    assert "messages: 8 -> 8" in copied.stdout and "verified" in copied.stdout
    assert again.returncode == 1 and "not empty" in again.stderr
    for run in (copied, again):
        assert PASSWORD not in run.stdout + run.stderr
    assert f"{parts.username}:***@" in copied.stdout


def test_cli_refuses_an_unknown_scheme_in_one_line(tmp_path: Path) -> None:
    run = _cli("mysql://db/x", str(tmp_path / "d.db"))

    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "'mysql'" in run.stderr

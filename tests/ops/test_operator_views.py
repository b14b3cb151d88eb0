"""`compactbot chats --top …` and `compactbot events CHAT`: read-only views of the store."""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from pathlib import Path

import pytest

from compactbot.bot.cli import build_parser
from compactbot.bot.operators import operator_cli
from compactbot.bot.settings.config import Config
from compactbot.bot.store import CompressionEvent, NewMessage, SqliteStore
from compactbot.bot.store.backends import Store
from tests.harness import make_config

STARTED = dt.datetime(2026, 11, 30, 8, 0, tzinfo=dt.UTC).timestamp()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def run_cli(config: Config, *argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return await operator_cli.dispatch(args.command, args, config)


def event(chat: str, outcome: str, before: int, after: int, **fields: object) -> CompressionEvent:
    defaults: dict = {
        "session_id": 1,
        "trigger": "hygiene",
        "started_at": STARTED,
        "ended_at": STARTED + 2.5,
        "messages_before": 40,
        "messages_after": 12 if outcome in ("compressed", "fallback") else 40,
        "summary_tokens": 300 if outcome == "compressed" else 0,
    }
    return CompressionEvent(
        chat_key=chat,
        outcome=outcome,
        tokens_before=before,
        tokens_after=after,
        **{**defaults, **fields},  # type: ignore[arg-type]
    )


async def chat_with(store: Store, key: str, text: str) -> None:
    await store.upsert_chat(key, key.split(":")[0])
    session = await store.active_session(key)
    await store.append_messages(session.id, [NewMessage(role="user", content=text, tokens=9)])


@pytest.fixture
async def config(tmp_path: Path) -> Config:
    config = make_config(tmp_path)
    today = dt.datetime.now(dt.UTC).date().isoformat()
    async with SqliteStore(config.storage.database) as store:
        for key in ("test:busy", "test:quiet", "test:broken"):
            await chat_with(store, key, f"hello from {key}")
        await store.add_usage("test:busy", "u1", "reply", 9_000, 1_000, day=today)
        await store.add_usage("test:quiet", "u1", "reply", 100, 20, day=today)
        await store.add_usage("test:broken", None, "compression", 2_000, 500, day=today)
        for _ in range(3):
            await store.record_compression_event(event("test:busy", "compressed", 8_000, 1_500))
        await store.record_compression_event(
            event("test:broken", "aborted", 7_000, 7_000, error="SummaryAuthError")
        )
        await store.record_compression_event(
            event(
                "test:broken",
                "fallback",
                7_000,
                2_000,
                started_at=STARTED + 60,
                ended_at=STARTED + 64,
            )
        )
    return config


async def test_chats_top_tokens_ranks_by_tokens_used(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_cli(config, "chats", "--top", "tokens") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["test:busy", "test:broken", "test:quiet"]
    assert "10,000 tokens used in 30 d" in lines[0]


async def test_chats_top_compactions_counts_changed_transcripts(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_cli(config, "chats", "--top", "compactions", "--limit", "2") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == ["test:busy", "test:broken"]
    assert "3 compactions" in lines[0] and "1 compactions" in lines[1]


async def test_chats_top_failures_names_the_last_failure(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_cli(config, "chats", "--top", "failures", "--limit", "1") == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith("test:broken ")
    assert line.endswith("2 failures (last: fallback)")


async def test_events_shows_before_after_duration_outcome_and_error(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_cli(config, "events", "test:broken") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "2026-11-30 08:00:00 UTC  s1  hygiene       aborted    40 → 40 msgs  "
        "7,000 → 7,000 tokens  summary 0  2.5s  error: SummaryAuthError",
        "2026-11-30 08:01:00 UTC  s1  hygiene       fallback   40 → 12 msgs  "
        "7,000 → 2,000 tokens  summary 0  4.0s",
    ]


async def test_events_of_an_unknown_chat_is_a_one_line_error(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_cli(config, "events", "test:nobody") == 1
    assert capsys.readouterr().err == "error: unknown chat 'test:nobody' (see `compactbot chats`)\n"


async def test_views_never_write_to_the_database(
    config: Config, capsys: pytest.CaptureFixture[str]
) -> None:
    path = Path(config.storage.database)
    before = await asyncio.to_thread(digest, path)
    for argv in (
        ("chats", "--top", "tokens"),
        ("chats", "--top", "failures"),
        ("events", "test:busy"),
        ("events", "test:nobody"),
    ):
        await run_cli(config, *argv)
    assert await asyncio.to_thread(digest, path) == before

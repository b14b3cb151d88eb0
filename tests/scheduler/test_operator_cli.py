from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from compactbot.bot.app import App
from compactbot.bot.cli import build_parser
from compactbot.bot.operators import operator_cli
from compactbot.bot.settings.config import Config
from tests.harness import make_config
from tests.scheduler.builders import FakeClock, fill_session

BIG = 70  # about 6,500 of 8,000 tokens


async def prepare_idle_chat(config: Config, *, window: str | None = None) -> None:
    """A big session last active two hours ago, in the database the CLI will open."""
    async with App(config, clock=FakeClock(time.time() - 2 * 3600)) as app:
        await fill_session(app.services, "test:g1", messages=BIG)
        if window is not None:
            await app.services.store.set_chat_setting("test:g1", "overnight_window", window)


async def run_cli(config: Config, *argv: str) -> int:
    args = build_parser().parse_args(list(argv))
    return await operator_cli.dispatch(args.command, args, config)


def closed_window() -> str:
    start = datetime.now(UTC) + timedelta(hours=3)
    return f"{start:%H:%M}-{start + timedelta(hours=1):%H:%M}"


async def test_compress_overnight_now_compacts_big_idle_sessions_outside_the_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = make_config(tmp_path, {"COMPACTBOT_CONTEXT_LENGTH": "8000"})
    await prepare_idle_chat(config, window=closed_window())

    status = await run_cli(config, "compress", "--overnight", "--now")

    assert status == 0
    assert capsys.readouterr().out.startswith(f"test:g1: compressed {BIG} → ")
    async with App(config) as app:
        events = await app.services.store.list_compression_events()
    assert [(e.trigger, e.outcome) for e in events] == [("overnight", "compressed")]


async def test_compress_overnight_without_now_respects_the_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = make_config(tmp_path, {"COMPACTBOT_CONTEXT_LENGTH": "8000"})
    await prepare_idle_chat(config, window=closed_window())

    status = await run_cli(config, "compress", "--overnight")

    assert status == 0
    assert capsys.readouterr().out == "no session is due for overnight compaction\n"


async def test_chats_lists_each_chat_next_overnight_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = make_config(tmp_path, {"COMPACTBOT_CONTEXT_LENGTH": "8000"})
    window = closed_window()
    await prepare_idle_chat(config, window=window)
    start = datetime.now(UTC) + timedelta(hours=3)

    await run_cli(config, "chats")

    shown = f"{start:%Y-%m-%d} {window.split('-')[0]} UTC"
    assert f"overnight {shown}" in capsys.readouterr().out

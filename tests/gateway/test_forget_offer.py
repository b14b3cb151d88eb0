"""/forget all waits for /forget confirm; the offer lives in the store, so any worker (or the
same one after a restart) can take the confirmation (SPEC 16)."""

from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime
from pathlib import Path

from compactbot.bot.app import App
from compactbot.bot.commands.forget import CONFIRM_SECONDS
from tests.harness import RecordingAdapter, group_message, make_config
from tests.scheduler.builders import FakeClock

CHAT = "test:g1"
ROOT = Path(__file__).resolve().parents[2]


async def _say(app: App, adapter: RecordingAdapter, text: str, author: str = "Dave") -> str:
    await app.gateway.handle(group_message(text, author=author, addressed=False), adapter)
    await app.gateway.join()
    return adapter.texts()[-1] if adapter.texts() else ""


async def _dave_wrote(app: App) -> list[str]:
    rows = await app.services.store.load_history(CHAT)
    return [r.text for r in rows if r.author_id == "dave"]


# Another worker: a fresh process on the same store sends one command and prints the reply.
_OTHER_WORKER = """
import asyncio, sys
from pathlib import Path
from compactbot.bot.app import App
from tests.harness import RecordingAdapter, group_message, make_config

async def main() -> None:
    adapter = RecordingAdapter()
    async with App(make_config(Path(sys.argv[1])), clock=lambda: float(sys.argv[4])) as app:
        message = group_message(sys.argv[2], author=sys.argv[3], addressed=False)
        await app.gateway.handle(message, adapter)
        await app.gateway.join()
    print(adapter.texts()[-1])

asyncio.run(main())
"""


async def _in_another_process(tmp_path: Path, text: str, author: str, now: float) -> str:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _OTHER_WORKER, str(tmp_path), text, author, str(now),
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().strip()


async def test_the_offer_reaches_another_process_and_is_taken_once(tmp_path: Path) -> None:
    clock = FakeClock.at(datetime(2026, 12, 5, 12, 0, tzinfo=UTC))
    adapter = RecordingAdapter()
    async with App(make_config(tmp_path), clock=clock) as app:
        await _say(app, adapter, "I live on Elm Street")
        assert "Nothing to confirm" in await _say(app, adapter, "/forget confirm")
        assert "all 1 messages" in await _say(app, adapter, "/forget all")
    later = clock.now + CONFIRM_SECONDS / 2
    # Another member cannot take Dave's offer; Dave can, from any worker, once.
    erin = await _in_another_process(tmp_path, "/forget confirm", "Erin", later)
    assert "Nothing to confirm" in erin
    assert "Forgotten: 1" in await _in_another_process(tmp_path, "/forget confirm", "Dave", later)
    again = await _in_another_process(tmp_path, "/forget confirm", "Dave", later)
    assert "Nothing to confirm" in again
    async with App(make_config(tmp_path), clock=clock) as app:
        assert await _dave_wrote(app) == []


async def test_an_expired_offer_forgets_nothing(tmp_path: Path) -> None:
    clock = FakeClock.at(datetime(2026, 12, 5, 12, 0, tzinfo=UTC))
    adapter = RecordingAdapter()
    async with App(make_config(tmp_path), clock=clock) as app:
        await _say(app, adapter, "call me on 555-0101")
        await _say(app, adapter, "/forget all")
        clock.advance(CONFIRM_SECONDS + 1)
        assert "Nothing to confirm" in await _say(app, adapter, "/forget confirm")
        assert await _dave_wrote(app) == ["[Dave] call me on 555-0101"]

"""A process for the redelivery test to SIGKILL between an update's dedup and its message insert.

    python -m tests.concurrency.ingest_driver DB_PATH

It stores one Telegram-like update through the real gateway on a store that stops, inside the
ingest transaction, right after the update was marked processed: it prints `deduped` and waits
to be killed there.
"""

from __future__ import annotations

import asyncio
import sys
import time
from typing import Any

from compactbot.bot.app import App
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.store.sqlite import appends as sqlite_appends
from compactbot.bot.store.sqlite.store import SqliteStore
from tests.harness import RecordingAdapter, group_message, make_config

UPDATE_ID = "7001"
HANG_SECONDS = 600.0


_appending = sqlite_appends._appending


def _stops_after_dedup(*args: Any, **kwargs: Any) -> Any:
    # Runs on the writer thread, inside the open ingest transaction.
    sys.stdout.write("deduped\n")
    sys.stdout.flush()
    time.sleep(HANG_SECONDS)
    return _appending(*args, **kwargs)


def redelivered() -> Any:
    return group_message("<<m1>> the order id is 4411", addressed=False, update_id=UPDATE_ID)


async def main(db: str) -> None:
    from pathlib import Path

    config = make_config(Path(db).parent)
    sqlite_appends._appending = _stops_after_dedup
    async with App(config, llm=OfflineModel(), store=SqliteStore(db)) as app:
        await app.gateway.handle(redelivered(), RecordingAdapter())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))

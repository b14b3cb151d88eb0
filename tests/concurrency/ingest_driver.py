"""A process for the redelivery test to SIGKILL between an update's dedup and its message insert.

    python -m tests.concurrency.ingest_driver DB_PATH

It stores one Telegram-like update through the real gateway on a store that stops, inside the
ingest transaction, right after the update was marked processed: it prints `deduped` and waits
to be killed there.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from bot.app import App
from bot.offline_model import OfflineModel
from bot.store.sqlite import SqliteStore
from tests.harness import RecordingAdapter, group_message, make_config

UPDATE_ID = "7001"
HANG_SECONDS = 600.0


class StopsAfterDedup(SqliteStore):
    async def _appending(self, *args: Any, **kwargs: Any) -> Any:
        sys.stdout.write("deduped\n")
        sys.stdout.flush()
        await asyncio.sleep(HANG_SECONDS)
        return await super()._appending(*args, **kwargs)


def redelivered() -> Any:
    return group_message("<<m1>> the order id is 4411", addressed=False, update_id=UPDATE_ID)


async def main(db: str) -> None:
    from pathlib import Path

    config = make_config(Path(db).parent)
    async with App(config, llm=OfflineModel(), store=StopsAfterDedup(db)) as app:
        await app.gateway.handle(redelivered(), RecordingAdapter())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))

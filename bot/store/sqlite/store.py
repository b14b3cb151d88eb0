"""The SQLite `Store`: one file (or ":memory:"), its writer and reader, and the background indexer;
every protocol is a mixin of its own module in this package."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from compactbot.bot.store.settings_cache import RawSettingsCache
from compactbot.bot.store.sqlite.chats import SqliteChats
from compactbot.bot.store.sqlite.compaction import SqliteCompaction
from compactbot.bot.store.sqlite.console import SqliteConsole
from compactbot.bot.store.sqlite.database import Database
from compactbot.bot.store.sqlite.dead_letters import SqliteDeadLetters
from compactbot.bot.store.sqlite.dedup import SqliteDedup
from compactbot.bot.store.sqlite.events import SqliteEvents
from compactbot.bot.store.sqlite.forget import SqliteForget
from compactbot.bot.store.sqlite.fts import QUIET_SECONDS, BackgroundIndexer
from compactbot.bot.store.sqlite.ingest import SqliteIngest
from compactbot.bot.store.sqlite.limits import SqliteLimits
from compactbot.bot.store.sqlite.locks import SqliteLocks
from compactbot.bot.store.sqlite.pins import SqlitePins
from compactbot.bot.store.sqlite.revisions import SqliteRevisions
from compactbot.bot.store.sqlite.search import SqliteSearch
from compactbot.bot.store.sqlite.sessions import SqliteSessions
from compactbot.bot.store.sqlite.settings import SqliteSettings
from compactbot.bot.store.sqlite.tables import SqliteTables
from compactbot.bot.store.sqlite.transcript import SqliteTranscript
from compactbot.bot.store.sqlite.usage import SqliteUsage

log = logging.getLogger(__name__)


class SqliteStore(
    SqliteChats,
    SqliteSessions,
    SqliteTranscript,
    SqliteSearch,
    SqliteIngest,
    SqliteCompaction,
    SqlitePins,
    SqliteSettings,
    SqliteLocks,
    SqliteDedup,
    SqliteEvents,
    SqliteUsage,
    SqliteDeadLetters,
    SqliteRevisions,
    SqliteForget,
    SqliteLimits,
    SqliteConsole,
):
    """`Store` on one SQLite file (or ":memory:"). Writes are serialised; reads use WAL."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Callable[[], float] = time.time,
        read_only: bool = False,
        index_quiet_seconds: float = QUIET_SECONDS,
    ) -> None:
        self._db = Database(path, read_only=read_only)
        self._fts = BackgroundIndexer(self._db, quiet_seconds=index_quiet_seconds)
        self._clock = clock
        self._last_prune = 0.0
        self._settings_cache = RawSettingsCache(clock)

    @property
    def fts_tokenizer(self) -> str:
        """`trigram` (substring search, CJK) or `unicode61` on SQLite older than 3.34."""
        return self._db.fts_tokenizer

    def tables(self) -> SqliteTables:
        """Raw whole-table access, for `compactbot store copy`."""
        return SqliteTables(self._db)

    def observe_commits(self, callback: Callable[[float], None]) -> None:
        """`callback(seconds)` after every committed write transaction (the metrics hook)."""
        self._db.on_commit = callback

    async def open(self) -> None:
        if self._db.is_open:
            return
        await self._db.open()
        if not self._db.read_only:
            self._fts.start()

    async def close(self) -> None:
        await self._fts.close()
        await self._db.close()

    async def index_pending(self) -> int:
        """Put every stored row in the full-text index now; how many were not yet in it."""
        return await self._fts.index_pending()

    async def __aenter__(self) -> SqliteStore:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

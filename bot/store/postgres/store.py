"""The PostgreSQL `Store`: the connection pool and the durable turn queue's parts; every
protocol is a mixin of its own module in this package, mirroring bot/store/sqlite/.

Writers of one session are ordered by the session row's lock, which every write of it takes first.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType

from compactbot.bot.store.postgres.chats import PostgresChats
from compactbot.bot.store.postgres.compaction import PostgresCompaction
from compactbot.bot.store.postgres.console import PostgresConsole
from compactbot.bot.store.postgres.database import PostgresDatabase, redacted_dsn
from compactbot.bot.store.postgres.dead_letters import PostgresDeadLetters
from compactbot.bot.store.postgres.dedup import PostgresDedup
from compactbot.bot.store.postgres.events import PostgresEvents
from compactbot.bot.store.postgres.forget import PostgresForget
from compactbot.bot.store.postgres.ingest import PostgresIngest
from compactbot.bot.store.postgres.limits import PostgresLimits
from compactbot.bot.store.postgres.locks import PostgresLocks
from compactbot.bot.store.postgres.pins import PostgresPins
from compactbot.bot.store.postgres.queue.inbox import PostgresInbox
from compactbot.bot.store.postgres.queue.outbox import PostgresOutbox
from compactbot.bot.store.postgres.queue.pacing import PostgresPacing
from compactbot.bot.store.postgres.revisions import PostgresRevisions
from compactbot.bot.store.postgres.search import PostgresSearch
from compactbot.bot.store.postgres.sessions import PostgresSessions
from compactbot.bot.store.postgres.settings import PostgresSettings
from compactbot.bot.store.postgres.tables import PostgresTables
from compactbot.bot.store.postgres.transcript import PostgresTranscript
from compactbot.bot.store.postgres.usage import PostgresUsage
from compactbot.bot.store.settings_cache import RawSettingsCache

log = logging.getLogger(__name__)


class PostgresStore(
    PostgresChats,
    PostgresSessions,
    PostgresTranscript,
    PostgresSearch,
    PostgresIngest,
    PostgresCompaction,
    PostgresPins,
    PostgresSettings,
    PostgresLocks,
    PostgresDedup,
    PostgresEvents,
    PostgresUsage,
    PostgresDeadLetters,
    PostgresRevisions,
    PostgresForget,
    PostgresLimits,
    PostgresConsole,
):
    """`Store` on a PostgreSQL database (`postgresql://…`; `?search_path=` picks the schema)."""

    def __init__(self, dsn: str, *, clock: Callable[[], float] = time.time) -> None:
        self._db = PostgresDatabase(dsn)
        self._clock = clock
        self._last_prune = 0.0
        self._settings_cache = RawSettingsCache(clock)

    @property
    def location(self) -> str:
        """The DSN without its password, for logs and banners."""
        return redacted_dsn(self._db.dsn)

    @property
    def dsn(self) -> str:
        """The DSN as given (it may hold a password): for dedicated connections, never logs."""
        return self._db.dsn

    @property
    def cjk_trigrams(self) -> bool:
        """False when the database's ctype makes no trigrams of CJK text (search then scans)."""
        return self._db.cjk_trigrams

    def inbox(self) -> PostgresInbox:
        """The durable turn queue (workers, SPEC 15)."""
        return PostgresInbox(self._db, self._clock)

    def outbox(self) -> PostgresOutbox:
        """What finished turns said, awaiting delivery."""
        return PostgresOutbox(self._db, self._clock)

    def pacing(self) -> PostgresPacing:
        """Send slots every worker takes before a request leaves (a platform's limits)."""
        return PostgresPacing(self._db, self._clock)

    def tables(self) -> PostgresTables:
        """Raw whole-table access, for `compactbot store copy`."""
        return PostgresTables(self._db)

    def observe_commits(self, callback: Callable[[float], None]) -> None:
        """`callback(seconds)` after every committed write transaction (the metrics hook)."""
        self._db.on_commit = callback

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    async def __aenter__(self) -> PostgresStore:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

"""The storage protocols of the transcript: its reads, and its writes (ingest, appends, the
fenced compaction commit), so a consumer that only reads names only the reads."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from compactbot.bot.store.base import (
    CompactionCommit,
    CompressionEvent,
    IngestItem,
    IngestResult,
    NewMessage,
    SearchHit,
    SessionRecord,
    StateDelta,
    StoredMessage,
    TurnFence,
)
from compactbot.compression.memory import Memory


class TranscriptReads(Protocol):
    """A session's rows (live and archived), its memory, and search over a chat's history."""

    async def load_active(self, session_id: int) -> list[StoredMessage]: ...
    async def load_appended(
        self, session_id: int, after_id: int, version: int
    ) -> list[StoredMessage] | None:
        """Active rows with id > `after_id` in transcript order, or None if the session's
        version is no longer `version` (read in one statement, so the two agree)."""
        ...

    async def load_history(
        self, chat_key: str, *, include_archived: bool = True
    ) -> list[StoredMessage]: ...
    async def load_memory(self, session_id: int) -> Memory:
        """The session's memory as the last committed compaction left it (empty before one)."""
        ...

    async def load_messages(self, session_id: int, ids: Sequence[int]) -> list[StoredMessage]:
        """The session's rows with these ids, archived ones included, in transcript order."""
        ...

    async def count_archived(self, chat_key: str) -> int:
        """Rows of the chat that are no longer live (archived by compaction), all sessions."""
        ...

    async def search(self, chat_key: str, query: str, limit: int = 10) -> list[SearchHit]: ...


class TranscriptWrites(Protocol):
    """Rows in (ingest, appends), each with the session's running totals in its transaction,
    and the compaction commit that replaces a span of them."""

    async def ingest(self, items: Sequence[IngestItem]) -> list[IngestResult]:
        """Dedup, chat upsert and message insert of every item in ONE transaction, in order.

        An item whose update id was seen before is a duplicate and writes nothing.
        """
        ...

    async def append_messages(
        self,
        session_id: int,
        messages: Sequence[NewMessage],
        *,
        fence: TurnFence | None = None,
    ) -> list[int]:
        """Insert in order and update the session's running totals in the same transaction."""
        ...

    async def append_batch(
        self, items: Sequence[tuple[int, Sequence[NewMessage]]]
    ) -> list[list[int]]:
        """`append_messages` for several sessions in one transaction (all or nothing)."""
        ...

    async def archive_and_compact(
        self,
        session: SessionRecord,
        compacted: Sequence[NewMessage],
        watermark: int | None,
        *,
        state: StateDelta | None = None,
        system_prompt: str | None = None,
        event: CompressionEvent | None = None,
        holder: str | None = None,
        memory: Memory | None = None,
        span_ids: Sequence[int] | None = None,
    ) -> CompactionCommit | None:
        """The whole compaction commit, in one transaction; `memory` (SPEC 6.11), when given,
        replaces the session's memory in that same transaction.

        Archives the active rows up to and including the row `watermark` (in transcript order;
        None archives nothing) and inserts `compacted` in their place, before the rows that came
        after it; applies the `state` delta to the current state; writes `system_prompt` and
        `event`; releases `holder`'s lock.
        Compare-and-set on `session.version` (and on `holder` still owning the lock): returns
        None and changes nothing if another commit won. `span_ids`, the live rows the compaction
        read: while every one of them is still live, a version change (an edit, late content)
        does not fence the commit out; the edit is applied after it, as to any archived row, and
        each verbatim copy (`NewMessage.copy_of`) takes its original's text as of the commit.
        """
        ...

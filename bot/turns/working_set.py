"""The active transcripts of recent sessions, kept in memory by the worker that runs turns (SPEC 8).

A turn reads its session's transcript here instead of from the store: the copy is extended with
the rows appended since (one indexed read of the new rows only) and read again whole only when a
compaction changed the session's `version`, which every commit bumps. A copy is used only while
the store's version and active-row count say nothing but appends happened to it, so a stale copy
is never used, whichever path or process wrote to the session.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from compactbot.bot.store.base import SessionRecord, StoredMessage
from compactbot.bot.store.protocols.transcript_store import TranscriptReads

log = logging.getLogger(__name__)

# Bounds on what is kept: the sessions that spoke last, and the rows they hold in all (a
# 50,000-row group chat is about 40 MB of rows and wire dicts).
MAX_SESSIONS = 256
MAX_ROWS = 250_000


@dataclass(slots=True)
class _Entry:
    """One session's rows, only ever appended to while `version` holds."""

    version: int
    rows: list[StoredMessage] = field(default_factory=list)
    wire: list[dict[str, Any]] = field(default_factory=list)
    prefix_tokens: list[int] = field(default_factory=lambda: [0])
    positions: dict[int, int] = field(default_factory=dict)
    max_id: int = 0
    # [system prompt, *wire], kept up to date with the rows: a turn that answers the newest
    # message sends this very list, so its cost does not grow with the history (a copy of a
    # 50,000-entry list costs ~1 ms in reference counting alone).
    request: list[dict[str, Any]] | None = None

    def extend(self, rows: Sequence[StoredMessage]) -> None:
        total = self.prefix_tokens[-1]
        for row in rows:
            self.positions[row.id] = len(self.rows)
            self.rows.append(row)
            wire = row.to_openai()
            self.wire.append(wire)
            if self.request is not None:
                self.request.append(wire)
            total += row.tokens
            self.prefix_tokens.append(total)
            self.max_id = max(self.max_id, row.id)

    def shared_request(self, system_prompt: str) -> list[dict[str, Any]]:
        if self.request is None or self.request[0]["content"] != system_prompt:
            self.request = [{"role": "system", "content": system_prompt}, *self.wire]
        return self.request


@dataclass(frozen=True, slots=True)
class ActiveTranscript:
    """A session's active rows at one moment: a view that later appends do not change."""

    version: int
    length: int
    _entry: _Entry

    @property
    def rows(self) -> Sequence[StoredMessage]:
        """All rows (a copy of the list: O(n), for callers that need every row)."""
        return self._entry.rows[: self.length]

    def row(self, index: int) -> StoredMessage:
        if not 0 <= index < self.length:
            raise IndexError(index)
        return self._entry.rows[index]

    def request(
        self, system_prompt: str, end: int, extra: Sequence[int] = ()
    ) -> list[dict[str, Any]]:
        """The model's messages: the system prompt, rows[:end], then the rows at `extra`.

        When that is the whole transcript the list is shared with the working set (and later
        turns): callers must not mutate it or its dicts.
        """
        entry = self._entry
        if end >= self.length == len(entry.rows) and not extra:
            return entry.shared_request(system_prompt)
        return [
            {"role": "system", "content": system_prompt},
            *entry.wire[: min(end, self.length)],
            *(entry.wire[i] for i in extra),
        ]

    def index_of(self, message_id: int) -> int | None:
        index = self._entry.positions.get(message_id)
        return index if index is not None and index < self.length else None

    def tokens(self, start: int = 0, end: int | None = None) -> int:
        """Stored tokens of rows[start:end], in O(1)."""
        stop = self.length if end is None else min(end, self.length)
        prefix = self._entry.prefix_tokens
        return prefix[stop] - prefix[min(start, stop)]


class WorkingSet:
    """Per-session active transcripts, least recently used dropped first."""

    def __init__(
        self, store: TranscriptReads, *, max_sessions: int = MAX_SESSIONS, max_rows: int = MAX_ROWS
    ) -> None:
        if max_sessions < 1 or max_rows < 1:
            raise ValueError(f"working set bounds must be positive: {max_sessions}, {max_rows}")
        self._store = store
        self._max_sessions = max_sessions
        self._max_rows = max_rows
        self._entries: OrderedDict[int, _Entry] = OrderedDict()
        self._rows = 0
        self.loads = 0  # whole-transcript reads, for the benchmark and tests

    async def active(self, session: SessionRecord) -> ActiveTranscript:
        """The session's active rows as of `session` (a record just read from the store)."""
        entry = self._entries.get(session.id)
        if entry is not None and entry.version == session.version:
            if len(entry.rows) < session.active_messages:
                await self._catch_up(session, entry)
            if len(entry.rows) == session.active_messages:
                self._entries.move_to_end(session.id)
                return ActiveTranscript(entry.version, len(entry.rows), entry)
        return await self._load(session)

    def forget(self, session_id: int) -> None:
        """Drop a session's copy (its session ended); the next turn reads it whole."""
        entry = self._entries.pop(session_id, None)
        if entry is not None:
            self._rows -= len(entry.rows)

    async def _catch_up(self, session: SessionRecord, entry: _Entry) -> None:
        before = len(entry.rows)
        appended = await self._store.load_appended(session.id, entry.max_id, session.version)
        if appended is None:
            return  # a compaction moved the version since `session` was read
        # Another caller may have caught up while this read was in flight.
        entry.extend([row for row in appended if row.id not in entry.positions])
        self._rows += len(entry.rows) - before
        self._evict()

    async def _load(self, session: SessionRecord) -> ActiveTranscript:
        rows = await self._store.load_active(session.id)
        self.loads += 1
        self.forget(session.id)
        entry = _Entry(session.version)
        entry.extend(rows)
        # Rows appended between reading `session` and the rows are real; a version that moved
        # meanwhile is caught next time, when the record and the entry disagree.
        self._entries[session.id] = entry
        self._rows += len(rows)
        self._evict()
        return ActiveTranscript(entry.version, len(entry.rows), entry)

    def _evict(self) -> None:
        while len(self._entries) > 1 and (
            len(self._entries) > self._max_sessions or self._rows > self._max_rows
        ):
            session_id, entry = self._entries.popitem(last=False)
            self._rows -= len(entry.rows)
            log.debug("working set dropped session=%d rows=%d", session_id, len(entry.rows))

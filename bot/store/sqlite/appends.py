"""The SQLite ingest and append transactions as plain sqlite3 code, run whole on the writer thread.

Each is one `Database.run_in_writer` call: one thread round trip per batch instead of one per
statement, with each session's rows inserted by one executemany and their ids read back by one
SELECT. Results and atomicity are those of the statement-by-statement form (SPEC 4).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import (
    IngestItem,
    IngestResult,
    NewMessage,
    SessionNotFound,
    SessionRecord,
)
from compactbot.bot.store.protocols.dedup_store import (
    PROCESSED_UPDATES_KEEP_SECONDS,
    PRUNE_INTERVAL_SECONDS,
)
from compactbot.bot.store.sqlite.dedup import MARK_PROCESSED_SQL, PRUNE_PROCESSED_SQL

OPEN_SESSION_SQL = (
    "SELECT * FROM sessions WHERE chat_key = ? AND scope_user IS ? AND ended_at IS NULL"
)
# The open session and its last seq in one statement: one lookup per session and batch.
OPEN_SESSION_WITH_SEQ_SQL = (
    "SELECT s.*, (SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = s.id) AS max_seq"
    " FROM sessions s WHERE chat_key = ? AND scope_user IS ? AND ended_at IS NULL"
)
INSERT_CHAT_SQL = "INSERT OR IGNORE INTO chats(key, platform, created_at) VALUES (?, ?, ?)"
INSERT_SESSION_SQL = (
    "INSERT INTO sessions(chat_key, scope_user, started_at, last_activity_at) VALUES (?, ?, ?, ?)"
)
MAX_SEQ_SQL = "SELECT coalesce(max(seq), 0) FROM messages WHERE session_id = ?"
NEW_IDS_SQL = "SELECT id FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq"
ADD_TOTALS_SQL = (
    "UPDATE sessions SET active_tokens = active_tokens + ?,"
    " active_messages = active_messages + ?, last_activity_at = ? WHERE id = ?"
)
UPSERT_CHAT_SQL = (
    "INSERT INTO chats(key, platform, title, parent_key, is_group, created_at)"
    " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET"
    " title = coalesce(excluded.title, title),"
    " parent_key = coalesce(excluded.parent_key, parent_key),"
    " is_group = excluded.is_group"
)


def ingest_batch(
    conn: sqlite3.Connection, items: Sequence[IngestItem], now: float, last_prune: float
) -> tuple[list[IngestResult], float]:
    """Dedup, store and count every item; the results in order and the new last-prune time."""
    # Per item: its result without the message id, and where that id will come from.
    pending: list[tuple[IngestResult, _Appending | None, int]] = []
    open_sessions: dict[tuple[str, str | None], _Appending] = {}
    for item in items:
        if item.update_id is not None and not mark_processed(
            conn, item.platform, item.update_id, now
        ):
            pending.append((IngestResult(duplicate=True), None, -1))
            continue
        if item.upsert_chat:
            conn.execute(
                UPSERT_CHAT_SQL,
                (
                    item.chat_key,
                    item.platform,
                    item.title,
                    item.parent_key,
                    int(item.is_group),
                    now,
                ),
            )
        appending = _appending(conn, item, now, open_sessions)
        message = item.message.analysed() if item.message is not None else None
        index = appending.add(message)
        result = appending.snapshot(now)
        if message is not None and message.states_rule:
            result = replace(result, states_rule=True)
        pending.append((result, appending, index))
    for appending in open_sessions.values():
        appending.flush(conn, now)
    results = [
        replace(result, message_id=appending.ids[index])
        if appending is not None and index >= 0
        else result
        for result, appending, index in pending
    ]
    return results, prune_processed(conn, now, last_prune)


def append_batch(
    conn: sqlite3.Connection, items: Sequence[tuple[int, Sequence[NewMessage]]], now: float
) -> list[list[int]]:
    """Each session's messages after its transcript, totals updated; the new ids per session."""
    found: list[list[int]] = []
    for session_id, messages in items:
        if not messages:
            found.append([])
            continue
        cur = conn.execute(
            ADD_TOTALS_SQL, (sum(m.tokens for m in messages), len(messages), now, session_id)
        )
        if cur.rowcount != 1:
            raise SessionNotFound(session_id)
        found.append(_insert_messages(conn, session_id, max_seq(conn, session_id), messages, now))
    return found


def _appending(
    conn: sqlite3.Connection,
    item: IngestItem,
    now: float,
    open_sessions: dict[tuple[str, str | None], _Appending],
) -> _Appending:
    scope = (item.chat_key, item.scope_user)
    appending = open_sessions.get(scope)
    if appending is None:
        row = conn.execute(OPEN_SESSION_WITH_SEQ_SQL, scope).fetchone()
        if row is None:
            row = start_session(conn, item.chat_key, item.scope_user, now)
            base_seq = 0
        else:
            base_seq = row["max_seq"]
        appending = _Appending(rows.session_from_row(row), base_seq)
        open_sessions[scope] = appending
    return appending


@dataclass(slots=True)
class _Appending:
    """One session's share of an ingest batch: rows go in at once, totals once at the end."""

    session: SessionRecord
    base_seq: int
    messages: list[NewMessage] = field(default_factory=list)
    tokens: int = 0
    ids: list[int] = field(default_factory=list)

    def add(self, message: NewMessage | None) -> int:
        """Queue `message`; its index among this session's new rows (-1 for none)."""
        if message is None:
            return -1
        self.messages.append(message)
        self.tokens += message.tokens
        return len(self.messages) - 1

    def snapshot(self, now: float) -> IngestResult:
        """The session as it stands after the rows queued so far."""
        count = len(self.messages)
        session = replace(
            self.session,
            active_tokens=self.session.active_tokens + self.tokens,
            active_messages=self.session.active_messages + count,
            last_activity_at=now if count else self.session.last_activity_at,
        )
        return IngestResult(False, session, None)

    def flush(self, conn: sqlite3.Connection, now: float) -> None:
        if not self.messages:
            return
        self.ids = _insert_messages(conn, self.session.id, self.base_seq, self.messages, now)
        conn.execute(ADD_TOTALS_SQL, (self.tokens, len(self.messages), now, self.session.id))


def _insert_messages(
    conn: sqlite3.Connection,
    session_id: int,
    base: int,
    messages: Sequence[NewMessage],
    now: float,
) -> list[int]:
    if len(messages) == 1:
        # The usual share of a batch: the row id comes with the insert, no read-back.
        params = rows.message_params(messages[0], session_id, base + 1, now)
        row_id = conn.execute(rows.INSERT_MESSAGE_SQL, params).lastrowid
        assert row_id is not None
        return [row_id]
    conn.executemany(
        rows.INSERT_MESSAGE_SQL,
        [rows.message_params(m, session_id, base + i + 1, now) for i, m in enumerate(messages)],
    )
    return [r[0] for r in conn.execute(NEW_IDS_SQL, (session_id, base))]


def mark_processed(conn: sqlite3.Connection, platform: str, update_id: str, now: float) -> bool:
    return conn.execute(MARK_PROCESSED_SQL, (platform, str(update_id), now)).rowcount == 1


def prune_processed(conn: sqlite3.Connection, now: float, last_prune: float) -> float:
    """Drop dedup keys too old to be redelivered, at most hourly; the new last-prune time."""
    if now - last_prune < PRUNE_INTERVAL_SECONDS:
        return last_prune
    conn.execute(PRUNE_PROCESSED_SQL, (now - PROCESSED_UPDATES_KEEP_SECONDS,))
    return now


def start_session(
    conn: sqlite3.Connection, chat_key: str, scope_user: str | None, now: float
) -> Any:
    conn.execute(INSERT_CHAT_SQL, (chat_key, chat_key.split(":", 1)[0], now))
    cur = conn.execute(INSERT_SESSION_SQL, (chat_key, scope_user, now, now))
    return conn.execute("SELECT * FROM sessions WHERE id = ?", (cur.lastrowid,)).fetchone()


def max_seq(conn: sqlite3.Connection, session_id: int) -> int:
    return int(conn.execute(MAX_SEQ_SQL, (session_id,)).fetchone()[0])

"""The SQLite `ConsoleRecords`: console sessions, one-time links and the audit log."""

from __future__ import annotations

import sqlite3
from typing import Any

from compactbot.bot.store.protocols.console_records import (
    AUDIT_PAGE_MAX,
    AuditEntry,
    ConsoleSession,
    audit_from_row,
    session_from_row,
)
from compactbot.bot.store.sqlite.database import Database

_INSERT_SESSION_SQL = (
    "INSERT INTO console_sessions(token_hash, who, role, chat_key, created_at, expires_at)"
    " VALUES (?, ?, ?, ?, ?, ?)"
)
_SELECT_AUDIT_SQL = (
    "SELECT * FROM console_audit WHERE (? IS NULL OR chat_key = ?) AND (? IS NULL OR id < ?)"
    " ORDER BY id DESC LIMIT ?"
)


class SqliteConsole:
    """The SQLite `ConsoleRecords` methods; `SqliteStore` inherits them."""

    _db: Database

    async def open_console_session(self, token_hash: str, session: ConsoleSession) -> None:
        def put(conn: sqlite3.Connection) -> None:
            _prune(conn, session.created_at)
            conn.execute(_INSERT_SESSION_SQL, _session_params(token_hash, session))

        await self._db.run_in_writer(put)

    async def console_session(self, token_hash: str, now: float) -> ConsoleSession | None:
        row = await self._db.fetchone(
            "SELECT * FROM console_sessions WHERE token_hash = ? AND expires_at > ?",
            (token_hash, now),
        )
        return session_from_row(row) if row is not None else None

    async def close_console_session(self, token_hash: str) -> None:
        def delete(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM console_sessions WHERE token_hash = ?", (token_hash,))

        await self._db.run_in_writer(delete)

    async def add_sign_in_link(
        self, token_hash: str, chat_key: str, who: str, now: float, expires_at: float
    ) -> None:
        def put(conn: sqlite3.Connection) -> None:
            _prune(conn, now)
            conn.execute(
                "INSERT INTO console_links(token_hash, chat_key, who, created_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (token_hash, chat_key, who, now, expires_at),
            )

        await self._db.run_in_writer(put)

    async def redeem_sign_in_link(
        self, link_hash: str, session_hash: str, now: float, session_expires_at: float
    ) -> ConsoleSession | None:
        def redeem(conn: sqlite3.Connection) -> ConsoleSession | None:
            # One writer transaction: of two requests with the same link, one finds it used.
            row = conn.execute(
                "SELECT chat_key, who FROM console_links"
                " WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?",
                (link_hash, now),
            ).fetchone()
            if row is None:
                return None
            conn.execute(
                "UPDATE console_links SET used_at = ? WHERE token_hash = ?", (now, link_hash)
            )
            session = ConsoleSession(
                str(row[1]), "chat_admin", str(row[0]), now, session_expires_at
            )
            conn.execute(_INSERT_SESSION_SQL, _session_params(session_hash, session))
            return session

        return await self._db.run_in_writer(redeem)

    async def record_audit(self, entry: AuditEntry) -> int:
        def put(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO console_audit(at, who, role, chat_key, action, detail)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (entry.at, entry.who, entry.role, entry.chat_key, entry.action, entry.detail),
            )
            return int(cur.lastrowid or 0)

        return await self._db.run_in_writer(put)

    async def list_audit(
        self, *, chat_key: str | None = None, before_id: int | None = None, limit: int = 50
    ) -> list[AuditEntry]:
        limit = max(1, min(limit, AUDIT_PAGE_MAX))
        found = await self._db.fetchall(
            _SELECT_AUDIT_SQL, (chat_key, chat_key, before_id, before_id, limit)
        )
        return [audit_from_row(r) for r in found]


def _prune(conn: sqlite3.Connection, now: float) -> None:
    conn.execute("DELETE FROM console_sessions WHERE expires_at <= ?", (now,))
    conn.execute("DELETE FROM console_links WHERE expires_at <= ?", (now,))


def _session_params(token_hash: str, session: ConsoleSession) -> tuple[Any, ...]:
    return (
        token_hash,
        session.who,
        session.role,
        session.chat_key,
        session.created_at,
        session.expires_at,
    )

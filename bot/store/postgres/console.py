"""The PostgreSQL `ConsoleRecords`, statement for statement bot/store/sqlite/console.py."""

from __future__ import annotations

from compactbot.bot.store.postgres.database import PostgresDatabase
from compactbot.bot.store.protocols.console_records import (
    AUDIT_PAGE_MAX,
    AuditEntry,
    ConsoleSession,
    audit_from_row,
    session_from_row,
)

_INSERT_SESSION_SQL = (
    "INSERT INTO console_sessions(token_hash, who, role, chat_key, created_at, expires_at)"
    " VALUES ($1, $2, $3, $4, $5, $6)"
)
_PRUNE_SQL = (
    "DELETE FROM console_sessions WHERE expires_at <= $1",
    "DELETE FROM console_links WHERE expires_at <= $1",
)


class PostgresConsole:
    """The PostgreSQL `ConsoleRecords` methods; `PostgresStore` inherits them."""

    _db: PostgresDatabase

    async def open_console_session(self, token_hash: str, session: ConsoleSession) -> None:
        async with self._db.transaction() as conn:
            for sql in _PRUNE_SQL:
                await conn.execute(sql, session.created_at)
            await conn.execute(
                _INSERT_SESSION_SQL,
                token_hash,
                session.who,
                session.role,
                session.chat_key,
                session.created_at,
                session.expires_at,
            )

    async def console_session(self, token_hash: str, now: float) -> ConsoleSession | None:
        row = await self._db.fetchone(
            "SELECT * FROM console_sessions WHERE token_hash = $1 AND expires_at > $2",
            (token_hash, now),
        )
        return session_from_row(row) if row is not None else None

    async def close_console_session(self, token_hash: str) -> None:
        await self._db.write_one(
            "DELETE FROM console_sessions WHERE token_hash = $1", (token_hash,)
        )

    async def add_sign_in_link(
        self, token_hash: str, chat_key: str, who: str, now: float, expires_at: float
    ) -> None:
        async with self._db.transaction() as conn:
            for sql in _PRUNE_SQL:
                await conn.execute(sql, now)
            await conn.execute(
                "INSERT INTO console_links(token_hash, chat_key, who, created_at, expires_at)"
                " VALUES ($1, $2, $3, $4, $5)",
                token_hash,
                chat_key,
                who,
                now,
                expires_at,
            )

    async def redeem_sign_in_link(
        self, link_hash: str, session_hash: str, now: float, session_expires_at: float
    ) -> ConsoleSession | None:
        async with self._db.transaction() as conn:
            # The UPDATE locks the link's row: a second worker redeeming it at the same moment
            # waits for this commit, then finds used_at set and matches nothing.
            row = await conn.fetchrow(
                "UPDATE console_links SET used_at = $1"
                " WHERE token_hash = $2 AND used_at IS NULL AND expires_at > $1"
                " RETURNING chat_key, who",
                now,
                link_hash,
            )
            if row is None:
                return None
            session = ConsoleSession(
                row["who"], "chat_admin", row["chat_key"], now, session_expires_at
            )
            await conn.execute(
                _INSERT_SESSION_SQL,
                session_hash,
                session.who,
                session.role,
                session.chat_key,
                session.created_at,
                session.expires_at,
            )
        return session

    async def record_audit(self, entry: AuditEntry) -> int:
        row = await self._db.write_one(
            "INSERT INTO console_audit(at, who, role, chat_key, action, detail)"
            " VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
            (entry.at, entry.who, entry.role, entry.chat_key, entry.action, entry.detail),
        )
        return int(row["id"])

    async def list_audit(
        self, *, chat_key: str | None = None, before_id: int | None = None, limit: int = 50
    ) -> list[AuditEntry]:
        limit = max(1, min(limit, AUDIT_PAGE_MAX))
        found = await self._db.fetchall(
            "SELECT * FROM console_audit WHERE ($1::text IS NULL OR chat_key = $1)"
            " AND ($2::bigint IS NULL OR id < $2) ORDER BY id DESC LIMIT $3",
            (chat_key, before_id, limit),
        )
        return [audit_from_row(r) for r in found]

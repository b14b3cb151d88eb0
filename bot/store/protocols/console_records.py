"""What the operator console keeps in the store: sign-in sessions, one-time links, the audit log.

They live in the database, so a cookie issued by one worker of a fleet is honoured by every other
(SPEC 18). Only hashes of the secrets are stored: a copy of the database signs nobody in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast, runtime_checkable

Role = Literal["operator", "chat_admin"]
AUDIT_PAGE_MAX = 500


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    """Who a session cookie signs in; a chat admin's session is bound to one chat."""

    who: str
    role: Role
    chat_key: str | None
    created_at: float
    expires_at: float


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One change made through the console (or a sign-in): who, what, when, in which chat."""

    at: float
    who: str
    role: Role
    action: str
    detail: str
    chat_key: str | None = None
    id: int | None = None


class ConsoleSessions(Protocol):
    async def open_console_session(self, token_hash: str, session: ConsoleSession) -> None:
        """Store a new session (expired ones are deleted on the way)."""
        ...

    async def console_session(self, token_hash: str, now: float) -> ConsoleSession | None:
        """The session a cookie's hash names, if it has not expired or been closed."""
        ...

    async def close_console_session(self, token_hash: str) -> None: ...

    async def add_sign_in_link(
        self, token_hash: str, chat_key: str, who: str, now: float, expires_at: float
    ) -> None: ...

    async def redeem_sign_in_link(
        self, link_hash: str, session_hash: str, now: float, session_expires_at: float
    ) -> ConsoleSession | None:
        """Use the link and open a chat-admin session for its chat, in one transaction.

        None (and nothing written) when the link is unknown, expired or already used.
        """
        ...


class AuditLog(Protocol):
    async def record_audit(self, entry: AuditEntry) -> int: ...

    async def list_audit(
        self, *, chat_key: str | None = None, before_id: int | None = None, limit: int = 50
    ) -> list[AuditEntry]:
        """Newest first; `before_id` pages back; `chat_key` keeps one chat's entries."""
        ...


@runtime_checkable
class ConsoleRecords(ConsoleSessions, AuditLog, Protocol):
    """Both, as each backend implements them together."""


def session_from_row(row: Any) -> ConsoleSession:
    return ConsoleSession(
        who=row["who"],
        role=cast(Role, row["role"]),
        chat_key=row["chat_key"],
        created_at=float(row["created_at"]),
        expires_at=float(row["expires_at"]),
    )


def audit_from_row(row: Any) -> AuditEntry:
    return AuditEntry(
        at=float(row["at"]),
        who=row["who"],
        role=cast(Role, row["role"]),
        action=row["action"],
        detail=row["detail"],
        chat_key=row["chat_key"],
        id=int(row["id"]),
    )

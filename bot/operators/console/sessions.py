"""Signing in and out: operator tokens, one-time links, the rate limit, and who is signed in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from compactbot.bot.operators.console.auth import (
    OperatorTokens,
    csrf_token,
    new_secret,
    secret_hash,
)
from compactbot.bot.settings.config import ConsoleConfig
from compactbot.bot.store.protocols.console_records import (
    AuditEntry,
    ConsoleRecords,
    ConsoleSession,
    Role,
)
from compactbot.bot.store.protocols.shared_limits import SharedLimits, limit_key

SIGN_IN_LIMIT_SCOPE = "console-sign-in"


class SignInRefused(Exception):
    """A sign-in that did not happen; str() is what the page says."""


class TooManyAttempts(SignInRefused):
    def __init__(self) -> None:
        super().__init__("Too many sign-in attempts from your address; wait a minute.")


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking: an operator sees every chat, a chat admin one chat."""

    who: str
    role: Role
    chat_key: str | None
    secret: str  # the session cookie's value (never stored, never shown)

    @property
    def operator(self) -> bool:
        return self.role == "operator"

    @property
    def csrf(self) -> str:
        return csrf_token(self.secret)

    def may_see(self, chat_key: str) -> bool:
        return self.operator or chat_key == self.chat_key


class SignIn:
    """Creates and reads sessions; all that a session needs lives in the store."""

    def __init__(
        self,
        records: ConsoleRecords,
        limits: SharedLimits,
        tokens: OperatorTokens,
        config: ConsoleConfig,
        clock: Callable[[], float],
    ) -> None:
        self._records = records
        self._limits = limits
        self._tokens = tokens
        self._config = config
        self._clock = clock

    async def with_token(self, token: str, address: str) -> Viewer:
        await self._count_attempt(address)
        name = self._tokens.match(token.strip())
        if name is None:
            raise SignInRefused("That token is not valid.")
        now = self._clock()
        secret = new_secret()
        session = ConsoleSession(name, "operator", None, now, self._expiry(now))
        await self._records.open_console_session(secret_hash(secret), session)
        await self._audit(session, "sign in", "operator token")
        return Viewer(name, "operator", None, secret)

    async def with_link(self, link_secret: str, address: str) -> Viewer:
        await self._count_attempt(address)
        now = self._clock()
        secret = new_secret()
        session = await self._records.redeem_sign_in_link(
            secret_hash(link_secret), secret_hash(secret), now, self._expiry(now)
        )
        if session is None:
            raise SignInRefused("This sign-in link is not valid: it was used, or it expired.")
        await self._audit(session, "sign in", "one-time link")
        return Viewer(session.who, session.role, session.chat_key, secret)

    async def viewer(self, secret: str | None) -> Viewer | None:
        if not secret:
            return None
        session = await self._records.console_session(secret_hash(secret), self._clock())
        if session is None:
            return None
        return Viewer(session.who, session.role, session.chat_key, secret)

    async def sign_out(self, viewer: Viewer) -> None:
        await self._records.close_console_session(secret_hash(viewer.secret))

    async def _count_attempt(self, address: str) -> None:
        allowed = await self._limits.rate_hit(
            limit_key(SIGN_IN_LIMIT_SCOPE, address),
            self._config.sign_in_attempts_per_minute,
            self._clock(),
        )
        if not allowed:
            raise TooManyAttempts()

    def _expiry(self, now: float) -> float:
        return now + self._config.session_hours * 3600

    async def _audit(self, session: ConsoleSession, action: str, detail: str) -> None:
        await self._records.record_audit(
            AuditEntry(
                at=session.created_at,
                who=session.who,
                role=session.role,
                action=action,
                detail=detail,
                chat_key=session.chat_key,
            )
        )

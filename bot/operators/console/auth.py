"""Secrets of the console: operator tokens kept as digests, session and link secrets, CSRF tokens.

Operator tokens are long random strings (at least 16 characters, bot/settings/values.py), so a
SHA-256 digest is enough to keep them out of memory dumps; a slow password hash would guard weak
passwords, which these are not, and would hold the event loop. Every comparison is constant-time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping

from compactbot.bot.settings.config import ConsoleConfig
from compactbot.bot.settings.values import operator_tokens

SECRET_BYTES = 32  # 256 bits: sessions, one-time links, form cookies
_CSRF_PURPOSE = b"compactbot console form"


def new_secret() -> str:
    """A fresh random secret; hex, so it survives any chat markup and URL unescaped."""
    return secrets.token_hex(SECRET_BYTES)


def secret_hash(secret: str) -> str:
    """What the store keeps of a session or link secret."""
    return hashlib.sha256(secret.encode()).hexdigest()


def csrf_token(secret: str) -> str:
    """The form token of a session (or of a pre-sign-in form cookie): only its holder can make it,
    and the session cookie itself is HttpOnly and SameSite=Strict."""
    return hmac.new(secret.encode(), _CSRF_PURPOSE, hashlib.sha256).hexdigest()


def same_secret(given: str | None, expected: str) -> bool:
    """Constant-time equality; a missing value is never equal."""
    if not given:
        return False
    return hmac.compare_digest(given.encode(), expected.encode())


class OperatorTokens:
    """The configured tokens, by operator name, kept only as digests."""

    def __init__(self, tokens: Mapping[str, str]) -> None:
        self._digests = tuple((name, _digest(token)) for name, token in tokens.items())

    @classmethod
    def from_config(cls, config: ConsoleConfig) -> OperatorTokens:
        raw = config.operator_tokens
        return cls(operator_tokens(raw.get_secret_value()) if raw is not None else {})

    def __len__(self) -> int:
        return len(self._digests)

    def match(self, candidate: str) -> str | None:
        """The operator whose token this is, or None; every digest is compared, so the time
        taken says nothing about which token came close."""
        given = _digest(candidate)
        found: str | None = None
        for name, expected in self._digests:
            if hmac.compare_digest(given, expected) and found is None:
                found = name
        return found


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()

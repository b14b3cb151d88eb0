"""Values shared by the global config and per-chat settings: ranges, daily windows, time zones."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import time
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import SecretStr

from compactbot.bot.store.backends import EXPECTED as STORE_URL_EXPECTED
from compactbot.bot.store.backends import UnsupportedStore, parse_store_url


@dataclass(frozen=True, slots=True)
class Range:
    """A closed interval; str() is what a refusal shows: "0.30–0.90" or "500–20000"."""

    low: float
    high: float

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int | float) and self.low <= value <= self.high

    def __str__(self) -> str:
        return f"{_number(self.low)}–{_number(self.high)}"


def _number(value: float) -> str:
    return str(value) if isinstance(value, int) else f"{value:.2f}"


# The widest value each numeric key can take from anyone, operators included. Operator bounds for
# chat admins sit inside these.
HARD_RANGES: dict[str, Range] = {
    "threshold": Range(0.01, 0.99),
    "target_ratio": Range(0.10, 0.80),  # the compressor clamps to this (SPEC 6.2)
    "protect_last_n": Range(1, 1000),
    "hygiene_threshold": Range(0.01, 0.99),
    "hygiene_hard_message_limit": Range(10, 1_000_000),
    "daily_token_budget": Range(0, 10**12),
    "user_rate_limit_per_minute": Range(0, 10_000),
    "retention_days": Range(0, 36_500),  # 0: keep messages until someone forgets them
}


_WINDOW = re.compile(r"^\s*(\d{1,2}):(\d{2})\s*-\s*(\d{1,2}):(\d{2})\s*$")


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A daily local-time window; it may wrap past midnight ("23:00-02:00")."""

    start: time
    end: time

    @classmethod
    def parse(cls, text: str) -> TimeWindow:
        match = _WINDOW.match(text)
        if not match:
            raise ValueError("a window HH:MM-HH:MM, e.g. 02:00-05:00")
        h1, m1, h2, m2 = (int(group) for group in match.groups())
        if h1 > 23 or h2 > 23 or m1 > 59 or m2 > 59:
            raise ValueError("a window HH:MM-HH:MM with hours 00-23 and minutes 00-59")
        if (h1, m1) == (h2, m2):
            raise ValueError("a window HH:MM-HH:MM whose start and end differ")
        return cls(time(h1, m1), time(h2, m2))

    def __str__(self) -> str:
        return f"{self.start:%H:%M}-{self.end:%H:%M}"

    @property
    def crosses_midnight(self) -> bool:
        return self.end < self.start

    def contains(self, moment: time) -> bool:
        if self.start < self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end


def check_window(text: str) -> str:
    """The window normalised to HH:MM-HH:MM."""
    return str(TimeWindow.parse(text))


_ZONE = re.compile(r"^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$")


def check_timezone(name: str) -> str:
    """The name itself when it is an IANA time zone this machine knows."""
    name = name.strip()
    if _ZONE.match(name):
        try:
            ZoneInfo(name)
            return name
        except (ZoneInfoNotFoundError, ValueError, OSError):
            pass
    raise ValueError("an IANA time zone such as UTC or Europe/Berlin")


_ENGINE = re.compile(r"^[A-Za-z_][\w.]*(:[A-Za-z_]\w*)?$")


def check_context_engine(name: str) -> str:
    """A registered engine name or "module:Class"; whether it loads is checked at start-up."""
    name = name.strip()
    if not _ENGINE.match(name):
        raise ValueError('an engine name such as "compressor" or "package.module:Class"')
    return name


def check_http_url(value: str | None) -> str | None:
    if value is not None:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("an http:// or https:// URL")
    return value


def check_database(value: str) -> str:
    """A path, "sqlite:///path" or "postgresql://…"; any other scheme fails start-up."""
    try:
        parse_store_url(value)
    except UnsupportedStore:
        raise ValueError(STORE_URL_EXPECTED) from None
    return value


def check_host_port(value: str) -> str:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError("host:port, e.g. 127.0.0.1:8443")
    return value


_WEBHOOK_SECRET = re.compile(r"^[A-Za-z0-9_-]{1,256}$")


def check_webhook_secret(value: SecretStr | None) -> SecretStr | None:
    if value is not None and not _WEBHOOK_SECRET.match(value.get_secret_value()):
        raise ValueError("1-256 characters from A-Z, a-z, 0-9, _ and - (Telegram's rule)")
    return value


_CHAT_KEY = re.compile(r"^[a-z]+:\S+$")
_OPERATOR_ID = re.compile(r"^(telegram|discord|console):\S+$")


def check_chat_keys(keys: tuple[str, ...]) -> tuple[str, ...]:
    for key in keys:
        if key != "*" and not _CHAT_KEY.match(key):
            raise ValueError(f'"*" or chat keys like "telegram:-100123", not {key!r}')
    return keys


def check_operator_ids(ids: tuple[str, ...]) -> tuple[str, ...]:
    for item in ids:
        if not _OPERATOR_ID.match(item):
            raise ValueError(f'ids like "telegram:12345" or "discord:678", not {item!r}')
    return ids


# Operator sign-in tokens of the web console: long enough that the sign-in rate limit, not luck,
# is what stands between a guesser and the console.
MIN_CONSOLE_TOKEN_CHARS = 16
_TOKEN_NAME = re.compile(r"^[A-Za-z0-9_.@-]{1,64}$")
_TOKENS_EXPECTED = (
    f'"name:token" pairs separated by commas, each token at least {MIN_CONSOLE_TOKEN_CHARS} '
    "characters without spaces or commas"
)


def operator_tokens(text: str) -> dict[str, str]:
    """`alice:tok1,bob:tok2` as {name: token}; ValueError(expected) when it is not that."""
    found: dict[str, str] = {}
    for pair in text.split(","):
        name, sep, token = pair.strip().partition(":")
        token_ok = len(token) >= MIN_CONSOLE_TOKEN_CHARS and not any(c.isspace() for c in token)
        if not sep or not _TOKEN_NAME.match(name) or not token_ok or name in found:
            raise ValueError(_TOKENS_EXPECTED)
        found[name] = token
    return found


def check_console_tokens(value: SecretStr | None) -> SecretStr | None:
    if value is not None:
        operator_tokens(value.get_secret_value())
    return value


def comma_list(value: object) -> object:
    """ "a, b" from the environment as ("a", "b"); lists from YAML pass as they are."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value

"""One logging filter that masks credentials in every record, whichever library wrote it.

Installed on the root logger's handlers (a filter on a handler sees the records of every
logger that propagates to it; a filter on the root logger itself would not). It masks the
configured secrets verbatim, then every shape `compression.redact` knows: URL userinfo,
bearer tokens, Telegram and Discord bot tokens, API keys, `key=value` secrets.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from urllib.parse import unquote, urlsplit

from compactbot.bot.settings.config import Config
from compactbot.compression.redact import REDACTED, redact

# Shorter configured values are not masked verbatim: "abc" would shred ordinary words.
MIN_SECRET_CHARS = 6


class RedactingFilter(logging.Filter):
    """Rewrites each record's message, traceback and stack text with secrets masked."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        super().__init__()
        # Longest first, so a secret that contains another is masked whole.
        self._secrets = sorted(
            {s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True
        )

    def clean(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return redact(text)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: show it raw rather than lose the record
            message = f"{record.msg!r} % {record.args!r}"
        record.msg, record.args = self.clean(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.clean(record.exc_text)
        if record.stack_info:
            record.stack_info = self.clean(record.stack_info)
        return True


def config_secrets(config: Config) -> list[str]:
    """Every configured credential: tokens, keys, the webhook secret, passwords in URLs."""
    secrets = (
        config.telegram.token,
        config.telegram.webhook_secret,
        config.discord.token,
        config.model.api_key,
        config.console.operator_tokens,
    )
    values = [s.get_secret_value() for s in secrets if s is not None]
    urls = (config.model.base_url, config.telegram.api_base_url, config.telegram.webhook_url)
    for url in urls:
        password = urlsplit(url).password if url else None
        if password:
            values += [password, unquote(password)]
    return values


def install_log_redaction(secrets: Iterable[str] = ()) -> RedactingFilter:
    """Put one RedactingFilter on every handler of the root logger (replacing an older one)."""
    redactor = RedactingFilter(secrets)
    for handler in logging.getLogger().handlers:
        for old in [f for f in handler.filters if isinstance(f, RedactingFilter)]:
            handler.removeFilter(old)
        handler.addFilter(redactor)
    return redactor

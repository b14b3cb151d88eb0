"""One-time sign-in links for chat admins, issued by the `/console` chat command (SPEC 18)."""

from __future__ import annotations

from compactbot.bot.operators.console.auth import new_secret, secret_hash
from compactbot.bot.operators.console.urls import LINK_PATH
from compactbot.bot.settings.config import Config
from compactbot.bot.store.protocols.console_records import ConsoleSessions


def console_base_url(config: Config) -> str:
    """Where people open the console: the configured public URL, else the endpoint's address."""
    public = config.console.public_url
    if public:
        return public.rstrip("/")
    return f"http://{config.operator_listen}"


async def issue_link(
    records: ConsoleSessions, config: Config, *, chat_key: str, who: str, now: float
) -> str:
    """A link that signs its first user in as an admin of `chat_key` only, once, for a while."""
    secret = new_secret()
    expires_at = now + config.console.link_minutes * 60
    await records.add_sign_in_link(secret_hash(secret), chat_key, who, now, expires_at)
    return f"{console_base_url(config)}{LINK_PATH}/{secret}"

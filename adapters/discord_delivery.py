"""One chunk out to Discord: retried on transient failures, and a slash command's followup."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import discord

from compactbot.adapters.discord_http import TOO_MANY_REQUESTS
from compactbot.adapters.discord_stream import TRANSPORT_ERRORS
from compactbot.bot.events import DeliveryError

log = logging.getLogger("compactbot.adapters.discord")

# Per REST call, including discord.py's own 429 waits (it sleeps through Retry-After itself).
SEND_TIMEOUT_SECONDS = 60.0
# Our retries on top of discord.py's: for transport errors and 5xx that outlived its retries.
SEND_RETRY_BACKOFF_SECONDS = (1.0, 3.0)
SERVER_ERROR_STATUS = 500
# Interaction.extras key: the command's reply is for the asker only (ephemeral).
PRIVATE_EXTRA = "compactbot_private"
NO_PINGS = discord.AllowedMentions.none()  # model output never pings @everyone, roles or users


async def deliver_chunk(
    channel: discord.PartialMessageable,
    chat_key: str,
    chunk: str,
    reference: discord.MessageReference | None,
    nonce: str | None = None,
) -> None:
    """One chunk to the channel, retried on transient failures, else DeliveryError."""
    # Only a reply carries a reference; mention_author=False keeps it from pinging the asker.
    reply: dict[str, Any] = {"reference": reference, "mention_author": False} if reference else {}
    if nonce is not None:  # discord.py sends enforce_nonce with it
        reply["nonce"] = nonce
    for delay in (*SEND_RETRY_BACKOFF_SECONDS, None):
        try:
            await asyncio.wait_for(
                channel.send(chunk, allowed_mentions=NO_PINGS, **reply), SEND_TIMEOUT_SECONDS
            )
            return
        except discord.HTTPException as exc:
            if delay is None or not _transient(exc):
                raise DeliveryError(f"discord refused the message: {exc.status}") from exc
            status: object = exc.status
        except TRANSPORT_ERRORS as exc:
            if delay is None:
                raise DeliveryError("discord unreachable") from exc
            status = type(exc).__name__
        log.warning(
            "discord: send failed (%s); retrying in %.1fs (chat=%s)", status, delay, chat_key
        )
        await asyncio.sleep(delay)


async def followup(interaction: discord.Interaction, chat_key: str, chunk: str) -> bool:
    """Answer a deferred slash command; False when its webhook no longer takes messages."""
    try:
        await asyncio.wait_for(
            interaction.followup.send(
                chunk,
                allowed_mentions=NO_PINGS,
                ephemeral=bool(interaction.extras.get(PRIVATE_EXTRA)),
            ),
            SEND_TIMEOUT_SECONDS,
        )
    except (discord.HTTPException, *TRANSPORT_ERRORS):
        log.warning("discord: interaction followup failed; using the channel (chat=%s)", chat_key)
        return False
    return True


def _transient(exc: discord.HTTPException) -> bool:
    """Worth retrying: a server error or an unexplained 429. Other 4xx would fail the same way."""
    return exc.status >= SERVER_ERROR_STATUS or exc.status == TOO_MANY_REQUESTS

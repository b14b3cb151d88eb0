"""Fetching a Discord attachment from the CDN, within the operator's size limit."""

from __future__ import annotations

import aiohttp
import discord

from compactbot.bot.events import Attachment
from compactbot.bot.ingress.media import MediaError


async def download_attachment(
    client: discord.Client | None, attachment: Attachment, max_bytes: int
) -> bytes:
    """The file's bytes; MediaError when it is too big or cannot be fetched."""
    if client is None:
        raise MediaError("discord client is not running")
    if attachment.size_bytes is not None and attachment.size_bytes > max_bytes:
        raise MediaError(f"file of {attachment.size_bytes} bytes is over the limit")
    try:
        data = await client.http.get_from_cdn(attachment.ref)
    except (discord.HTTPException, aiohttp.ClientError, OSError, TimeoutError) as exc:
        raise MediaError(type(exc).__name__) from exc
    if len(data) > max_bytes:
        raise MediaError(f"file of {len(data)} bytes is over the limit")
    return data

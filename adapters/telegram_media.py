"""Fetching a message's file from Telegram (getFile, then the file endpoint), within a limit."""

from __future__ import annotations

from telegram import Bot
from telegram.error import TelegramError

from compactbot.bot.events import Attachment
from compactbot.bot.ingress.media import MediaError


async def download_file(bot: Bot, attachment: Attachment, max_bytes: int) -> bytes:
    """The file's bytes; MediaError when Telegram refuses or the file exceeds `max_bytes`."""
    try:
        file = await bot.get_file(attachment.ref)
        if file.file_size is not None and file.file_size > max_bytes:
            raise MediaError(f"file of {file.file_size} bytes is over the limit")
        data = bytes(await file.download_as_bytearray())
    except TelegramError as exc:
        raise MediaError(type(exc).__name__) from exc
    if len(data) > max_bytes:
        raise MediaError(f"file of {len(data)} bytes is over the limit")
    return data

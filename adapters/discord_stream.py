"""Streaming a reply on Discord: one message edited at the pace `bot.streaming` sets.

discord.py sleeps through Discord's own 429s (those with a `Via` header); an unexplained 429
becomes a flood wait here. The final text is split like any reply, its first chunk replacing the
preview and the rest sent after it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import discord

from compactbot.adapters.discord_text import discord_chunks, neutralize_mass_mentions
from compactbot.bot.turns.streaming import FloodWait, PreviewFailed

# A preview frame fits one message; the final text is split properly instead.
PREVIEW_MAX_CHARS = 1990
PREVIEW_CURSOR = " …"
FLOOD_WAIT_SECONDS = 1.0  # an unexplained 429 names no retry_after
EDIT_TIMEOUT_SECONDS = 60.0
TOO_MANY_REQUESTS = 429
# What a failed request raises besides discord.HTTPException (the adapter sends with it too).
TRANSPORT_ERRORS = (aiohttp.ClientError, OSError, TimeoutError)

Deliver = Callable[[str, "discord.MessageReference | None"], Awaitable[None]]


class DiscordStreamSurface:
    """One reply's preview message and its final delivery."""

    def __init__(
        self,
        channel: discord.PartialMessageable,
        reference: discord.MessageReference | None,
        deliver: Deliver,
        allowed_mentions: discord.AllowedMentions,
    ) -> None:
        self._channel = channel
        self._reference = reference
        self._deliver = deliver
        self._mentions = allowed_mentions
        self.message: discord.Message | None = None

    async def show(self, text: str) -> None:
        body = neutralize_mass_mentions(text.rstrip())[: PREVIEW_MAX_CHARS - len(PREVIEW_CURSOR)]
        preview = body + PREVIEW_CURSOR
        try:
            if self.message is None:
                reply: dict[str, Any] = (
                    {"reference": self._reference, "mention_author": False}
                    if self._reference
                    else {}
                )
                self.message = await asyncio.wait_for(
                    self._channel.send(preview, allowed_mentions=self._mentions, **reply),
                    EDIT_TIMEOUT_SECONDS,
                )
            else:
                await asyncio.wait_for(self.message.edit(content=preview), EDIT_TIMEOUT_SECONDS)
        except discord.HTTPException as exc:
            if exc.status == TOO_MANY_REQUESTS:
                raise FloodWait(FLOOD_WAIT_SECONDS) from exc
            raise PreviewFailed(f"HTTP {exc.status}") from exc
        except TRANSPORT_ERRORS as exc:
            raise PreviewFailed(type(exc).__name__) from exc

    async def finish(self, text: str) -> None:
        chunks = [c for c in discord_chunks(neutralize_mass_mentions(text)) if c.strip()]
        rest = chunks
        if self.message is not None and chunks:
            try:
                await asyncio.wait_for(
                    self.message.edit(content=chunks[0], allowed_mentions=self._mentions),
                    EDIT_TIMEOUT_SECONDS,
                )
                rest = chunks[1:]
                self._reference = None
            except (discord.HTTPException, *TRANSPORT_ERRORS):
                rest = chunks  # the preview is gone or frozen: send the whole answer anew
        for chunk in rest:
            await self._deliver(chunk, self._reference)
            self._reference = None

"""Slash commands for the chat command set, and the interactions whose replies are pending.

Every slash command becomes the same text command a member could type (`/compress focus`), so
`bot.commands` stays the one place that runs commands and checks admin rights.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import discord
from discord import app_commands

from compactbot.adapters.discord_gating import PLATFORM, is_admin_permissions
from compactbot.bot.events import InboundMessage

# Discord keeps an interaction token (and so its followup webhook) valid for 15 minutes.
INTERACTION_TTL_SECONDS = 14 * 60
MAX_UNPIN_NUMBER = 1000

# Runs one command for an interaction: (interaction, command name, argument text).
SlashRunner = Callable[[discord.Interaction, str, str], Awaitable[None]]
AppCommand = app_commands.Command[Any, Any, None]

_PLAIN = {
    "help": "What the bot can do",
    "status": "Context gauge, compactions, breaker state",
    "new": "Start a new conversation (admins); the old one stays searchable",
    "reset": "Same as /new",
    "pins": "List this chat's pins",
    "usage": "Tokens used today and this month",
    "console": "A one-time sign-in link to the web console (admins; only you see it)",
}
_WITH_FOCUS = {
    "compress": "Compact older history now (admins)",
    "compact": "Same as /compress",
    "summary": "What you missed: since your last message, or 2h, @name, a topic (only you see it)",
    "catchup": "Same as /summary",
}
# Answered only to the member who asked (an ephemeral reply).
PRIVATE_REPLY_COMMANDS = frozenset({"summary", "catchup", "console"})


def slash_commands(run: SlashRunner) -> list[AppCommand]:
    """One app command per chat command; each hands `run` the text form of its arguments."""
    commands = [_plain(name, text, run) for name, text in _PLAIN.items()]
    commands += [_with_focus(name, text, run) for name, text in _WITH_FOCUS.items()]
    commands += [_config(run), _pin(run), _unpin(run)]
    return commands


def slash_inbound(interaction: discord.Interaction, name: str, args: str) -> InboundMessage:
    """The command as an addressed message; its id is the interaction's, so replies find it."""
    channel = interaction.channel
    channel_id = str(interaction.channel_id)
    parent_id = str(channel.parent_id) if isinstance(channel, discord.Thread) else None
    is_group = interaction.guild_id is not None
    title = getattr(channel, "name", None)
    return InboundMessage(
        platform=PLATFORM,
        chat_id=parent_id or channel_id,
        author_id=str(interaction.user.id),
        author_name=interaction.user.display_name,
        text=f"/{name} {args}".strip(),
        addressed=True,
        is_group=is_group,
        thread_id=channel_id if parent_id else None,
        platform_message_id=str(interaction.id),
        update_id=str(interaction.id),
        chat_title=f"#{title}" if isinstance(title, str) else None,
        # Resolved by Discord for this member in this channel; DMs are the member's own chat.
        is_admin=is_admin_permissions(interaction.permissions) if is_group else None,
        private_reply=name in PRIVATE_REPLY_COMMANDS,
    )


@dataclass(slots=True)
class PendingInteractions:
    """Deferred interactions by id, until their followup webhook expires."""

    clock: Callable[[], float] = time.monotonic
    _pending: dict[str, tuple[discord.Interaction, float]] = field(default_factory=dict)

    def add(self, interaction: discord.Interaction) -> None:
        pending = self._live()
        pending[str(interaction.id)] = (interaction, self.clock())

    def get(self, interaction_id: str | None) -> discord.Interaction | None:
        if interaction_id is None:
            return None
        entry = self._live().get(interaction_id)
        return entry[0] if entry else None

    def _live(self) -> dict[str, tuple[discord.Interaction, float]]:
        """The map with expired entries dropped, so it stays as small as the traffic."""
        now = self.clock()
        pending = {
            key: entry
            for key, entry in self._pending.items()
            if now - entry[1] < INTERACTION_TTL_SECONDS
        }
        self._pending = pending
        return pending


def _plain(name: str, description: str, run: SlashRunner) -> AppCommand:
    async def callback(interaction: discord.Interaction) -> None:
        await run(interaction, name, "")

    return app_commands.Command(name=name, description=description, callback=callback)


def _with_focus(name: str, description: str, run: SlashRunner) -> AppCommand:
    @app_commands.describe(focus="What the summary should keep in most detail")
    async def callback(interaction: discord.Interaction, focus: str | None = None) -> None:
        await run(interaction, name, focus or "")

    return app_commands.Command(name=name, description=description, callback=callback)


def _config(run: SlashRunner) -> AppCommand:
    @app_commands.describe(key="Setting name (omit to list all)", value="New value, or 'default'")
    async def callback(
        interaction: discord.Interaction, key: str | None = None, value: str | None = None
    ) -> None:
        await run(interaction, "config", f"{key} {value or ''}" if key else "")

    return app_commands.Command(
        name="config", description="Show or change this chat's settings", callback=callback
    )


def _pin(run: SlashRunner) -> AppCommand:
    @app_commands.describe(text="The fact to keep verbatim through every compaction")
    async def callback(interaction: discord.Interaction, text: str) -> None:
        await run(interaction, "pin", text)

    return app_commands.Command(name="pin", description="Pin a fact (admins)", callback=callback)


def _unpin(run: SlashRunner) -> AppCommand:
    @app_commands.describe(n="The pin's number in /pins")
    async def callback(
        interaction: discord.Interaction, n: app_commands.Range[int, 1, MAX_UNPIN_NUMBER]
    ) -> None:
        await run(interaction, "unpin", str(n))

    return app_commands.Command(
        name="unpin", description="Remove a pin (admins)", callback=callback
    )

"""Discord payload builders (users, roles, channels, guild, messages) that discord.py parses."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

DISCORD_EPOCH_MS = 1_420_070_400_000  # snowflakes count milliseconds from 2015-01-01
MANAGE_GUILD = 1 << 5
MANAGE_MESSAGES = 1 << 13
# What @everyone gets on a fresh server: view, send, history, embeds, files, reactions, threads,
# slash commands. Deliberately without MANAGE_* so ordinary members are not admins.
EVERYONE_PERMISSIONS = (
    ((1 << 6) | (1 << 10) | (1 << 11) | (1 << 14) | (1 << 15) | (1 << 16) | (1 << 31))
    | (1 << 35)
    | (1 << 38)
)
TEXT_CHANNEL = 0
PUBLIC_THREAD = 11
THREAD_ARCHIVE_MINUTES = 1440
DEFAULT_REPLY = 19  # MessageType.reply; 0 is MessageType.default


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


class Snowflakes:
    """Increasing snowflake ids whose timestamps are 'now', like Discord's."""

    def __init__(self) -> None:
        self._seq = itertools.count()

    def __call__(self) -> int:
        millis = int(datetime.now(UTC).timestamp() * 1000) - DISCORD_EPOCH_MS
        return (millis << 22) | (next(self._seq) & 0xFFF)


@dataclass(frozen=True, slots=True)
class GuildShape:
    """The ids of the one guild the fake serves."""

    guild_id: int
    channel_id: int
    thread_id: int
    owner_id: int


def user_payload(user_id: int, name: str, *, bot: bool = False) -> dict[str, Any]:
    return {
        "id": str(user_id),
        "username": name,
        "global_name": name,
        "discriminator": "0",
        "avatar": None,
        "bot": bot,
        "public_flags": 0,
    }


def role_payload(role_id: int, name: str, permissions: int, position: int) -> dict[str, Any]:
    return {
        "id": str(role_id),
        "name": name,
        "permissions": str(permissions),
        "position": position,
        "color": 0,
        "colors": {"primary_color": 0, "secondary_color": None, "tertiary_color": None},
        "hoist": False,
        "managed": False,
        "mentionable": False,
        "flags": 0,
    }


def member_payload(roles: list[int], user: dict[str, Any] | None = None) -> dict[str, Any]:
    member: dict[str, Any] = {
        "roles": [str(r) for r in roles],
        "joined_at": "2025-01-01T00:00:00+00:00",
        "deaf": False,
        "mute": False,
        "flags": 0,
        "pending": False,
        "nick": None,
    }
    if user is not None:
        member["user"] = user
    return member


def text_channel_payload(shape: GuildShape, channel_id: int, name: str) -> dict[str, Any]:
    return {
        "id": str(channel_id),
        "type": TEXT_CHANNEL,
        "guild_id": str(shape.guild_id),
        "name": name,
        "position": 0,
        "permission_overwrites": [],
        "nsfw": False,
        "parent_id": None,
        "topic": None,
        "last_message_id": None,
        "rate_limit_per_user": 0,
    }


def thread_payload(shape: GuildShape, thread_id: int, parent_id: int, name: str) -> dict[str, Any]:
    return {
        "id": str(thread_id),
        "type": PUBLIC_THREAD,
        "guild_id": str(shape.guild_id),
        "parent_id": str(parent_id),
        "owner_id": str(shape.owner_id),
        "name": name,
        "message_count": 0,
        "member_count": 1,
        "rate_limit_per_user": 0,
        "flags": 0,
        "thread_metadata": {
            "archived": False,
            "auto_archive_duration": THREAD_ARCHIVE_MINUTES,
            "archive_timestamp": now_iso(),
            "locked": False,
        },
    }


def guild_payload(
    shape: GuildShape,
    *,
    roles: list[dict[str, Any]],
    members: list[dict[str, Any]],
    channels: list[dict[str, Any]],
    threads: list[dict[str, Any]],
) -> dict[str, Any]:
    return {
        "id": str(shape.guild_id),
        "name": "Test guild",
        "icon": None,
        "owner_id": str(shape.owner_id),
        "afk_channel_id": None,
        "afk_timeout": 300,
        "verification_level": 0,
        "default_message_notifications": 0,
        "explicit_content_filter": 0,
        "mfa_level": 0,
        "nsfw_level": 0,
        "premium_tier": 0,
        "preferred_locale": "en-US",
        "features": [],
        "emojis": [],
        "stickers": [],
        "roles": roles,
        "members": members,
        "member_count": len(members),
        "channels": channels,
        "threads": threads,
        "presences": [],
        "voice_states": [],
        "stage_instances": [],
        "guild_scheduled_events": [],
        "large": False,
        "unavailable": False,
        "joined_at": "2025-01-01T00:00:00+00:00",
        "system_channel_id": None,
        "rules_channel_id": None,
        "application_id": None,
    }


def message_payload(
    *,
    message_id: int,
    channel_id: int,
    guild_id: int,
    author: dict[str, Any],
    content: str,
    member: dict[str, Any] | None = None,
    mentions: list[dict[str, Any]] | None = None,
    referenced: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "id": str(message_id),
        "channel_id": str(channel_id),
        "guild_id": str(guild_id),
        "author": author,
        "content": content,
        "timestamp": now_iso(),
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": False,
        "mentions": mentions or [],
        "mention_roles": [],
        "attachments": [],
        "embeds": [],
        "components": [],
        "pinned": False,
        "flags": 0,
        "type": DEFAULT_REPLY if referenced is not None else 0,
    }
    if member is not None:
        message["member"] = member
    if referenced is not None:
        message["message_reference"] = {
            "type": 0,
            "message_id": referenced["id"],
            "channel_id": referenced["channel_id"],
            "guild_id": str(guild_id),
        }
        message["referenced_message"] = referenced
    return message

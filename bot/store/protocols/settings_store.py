"""The storage protocol of per-chat settings (SPEC 9)."""

from __future__ import annotations

from typing import Protocol


class SettingsStore(Protocol):
    """Per-chat settings as raw strings; validation lives in bot/settings/chat_settings.py."""

    async def get_chat_settings(self, chat_key: str) -> dict[str, str]: ...
    async def set_chat_setting(self, chat_key: str, key: str, value: str) -> None: ...
    async def unset_chat_setting(self, chat_key: str, key: str) -> bool: ...

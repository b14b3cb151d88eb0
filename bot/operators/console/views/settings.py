"""A chat's settings with the range the viewer may use, and changing one (audited).

Validation is bot/settings/chat_settings.py's, the same as /config: a chat admin is held to the
operator's bounds, an operator to the hard ranges (as `compactbot config set`).
"""

from __future__ import annotations

from dataclasses import dataclass

from compactbot.bot.operators.console.deps import ConsoleDeps
from compactbot.bot.operators.console.sessions import Viewer
from compactbot.bot.settings import chat_settings
from compactbot.bot.settings.chat_settings import SETTINGS, SettingError

MAX_AUDIT_DETAIL_CHARS = 300


@dataclass(frozen=True, slots=True)
class SettingLine:
    key: str
    value: str
    raw: str  # the full stored value (a long system prompt is cut in `value`)
    source: str  # chat | parent | default
    default: str
    allowed: str  # the range or the form of a valid value, for this viewer
    description: str
    editable: bool
    choices: tuple[str, ...]  # fixed values, offered as a list


def _choices(key: str, deps: ConsoleDeps) -> tuple[str, ...]:
    spec = SETTINGS[key]
    if spec.choices is not None:
        return spec.choices(deps.config)
    if " | " in spec.expected:
        return tuple(spec.expected.split(" | "))
    return ()


async def setting_lines(deps: ConsoleDeps, viewer: Viewer, chat_key: str) -> list[SettingLine]:
    raw, parent_raw = await deps.services.raw_settings(chat_key)
    lines = []
    for described in chat_settings.describe_all(deps.config, raw, parent_raw):
        spec = SETTINGS[described.key]
        allowed = chat_settings.allowed_range(
            spec.key, deps.config, enforce_bounds=not viewer.operator
        )
        lines.append(
            SettingLine(
                key=spec.key,
                value=described.value,
                raw=raw.get(spec.key, ""),
                source=described.source,
                default=described.default,
                allowed=str(allowed) if allowed is not None else spec.expected,
                description=described.description,
                editable=viewer.operator or not spec.operator_only,
                choices=_choices(spec.key, deps),
            )
        )
    return lines


async def change_setting(
    deps: ConsoleDeps, viewer: Viewer, chat_key: str, key: str, value: str | None
) -> str:
    """Set `key` to `value` (None: back to the default); the stored text. Raises SettingError
    (out of bounds, invalid, operator-only) and changes nothing then."""
    bounded = not viewer.operator
    store = deps.services.stored_settings
    key = chat_settings.check_key(key, enforce_bounds=bounded)
    if value is None:
        await store.unset_chat_setting(chat_key, key)
        stored, detail = "", f"{key} reset to the default"
    else:
        stored = chat_settings.parse_setting(key, value, deps.config, enforce_bounds=bounded)
        await store.set_chat_setting(chat_key, key, stored)
        detail = f"{key} = {stored}"
    await deps.audit(viewer, "setting", _clipped(detail), chat_key)
    await deps.settings_changed(chat_key)
    return stored


def _clipped(text: str) -> str:
    one_line = " ".join(text.split())
    if len(one_line) <= MAX_AUDIT_DETAIL_CHARS:
        return one_line
    return one_line[: MAX_AUDIT_DETAIL_CHARS - 1] + "…"


__all__ = ["SettingError", "SettingLine", "change_setting", "setting_lines"]

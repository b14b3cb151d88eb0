"""Per-chat settings (SPEC 9): parsing, operator bounds, thread inheritance and /config listings."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal
from zoneinfo import ZoneInfo

from compactbot.bot.settings.config import Config
from compactbot.bot.settings.values import (
    HARD_RANGES,
    Range,
    TimeWindow,
    check_context_engine,
    check_timezone,
)

log = logging.getLogger(__name__)

Activation = Literal["mention", "always", "keyword"]
MemoryScope = Literal["shared", "per_user"]
Source = Literal["chat", "parent", "default"]

MAX_SYSTEM_PROMPT_CHARS = 4000
MAX_KEYWORD_CHARS = 64
MAX_MODEL_NAME_CHARS = 200
_MAX_SHOWN_RAW_CHARS = 40
_MAX_LISTED_CHARS = 60
_TRUE = frozenset({"on", "true", "yes", "1", "enabled"})
_FALSE = frozenset({"off", "false", "no", "0", "disabled"})
_LANGUAGE = re.compile(r"^[A-Za-z][A-Za-z \-]{0,31}$")


class SettingError(ValueError):
    """Root of refused per-chat settings; str() is one line fit to send back to the chat."""


class UnknownSetting(SettingError):
    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"unknown setting {_clip(key)}; known: {', '.join(SETTINGS)}")


class InvalidSetting(SettingError):
    def __init__(self, key: str, raw: str, expected: str) -> None:
        self.key, self.raw, self.expected = key, raw, expected
        super().__init__(f"{key} {_clip(raw)} is not valid: expected {expected}")


class SettingOutOfBounds(SettingError):
    def __init__(self, key: str, value: str, allowed: Range) -> None:
        self.key, self.value, self.allowed = key, value, allowed
        super().__init__(f"{key} {value} is outside the allowed range {allowed}")


class SettingRestricted(SettingError):
    """A key only operators may change (budgets, rate limits, the engine)."""

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"{key} can only be changed by an operator")


def _clip(raw: str) -> str:
    shown = repr(raw)
    return (
        shown if len(shown) <= _MAX_SHOWN_RAW_CHARS else shown[: _MAX_SHOWN_RAW_CHARS - 4] + "...'"
    )


@dataclass(frozen=True, slots=True)
class SettingSpec:
    key: str
    description: str
    parse: Callable[[str], object]  # raw text -> typed value; ValueError(expected) if it is not
    render: Callable[[object], str]  # typed value -> the normalised text stored and shown
    default: Callable[[Config], object]
    expected: str  # what a valid value looks like, for listings
    bounded: bool = False  # operators set [low, high] for chat admins in `bounds`
    operator_only: bool = False
    # Values the operator allows, when the config decides them (the models a chat may use).
    choices: Callable[[Config], tuple[str, ...]] | None = None

    @property
    def hard(self) -> Range | None:
        return HARD_RANGES.get(self.key)


def _float(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError("a number such as 0.5") from None
    if not math.isfinite(value):
        raise ValueError("a finite number")
    return value


def _int(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ValueError("a whole number") from None


def _switch(raw: str) -> bool:
    word = raw.lower()
    if word in _TRUE or word in _FALSE:
        return word in _TRUE
    raise ValueError("on or off")


def _choice(*choices: str) -> Callable[[str], object]:
    def parse(raw: str) -> str:
        if raw.lower() not in choices:
            raise ValueError(" | ".join(choices))
        return raw.lower()

    return parse


def _text(limit: int, *, single_line: bool = False) -> Callable[[str], object]:
    def parse(raw: str) -> str:
        if not raw:
            raise ValueError("some text")
        if len(raw) > limit:
            raise ValueError(f"at most {limit} characters")
        if single_line and "\n" in raw:
            raise ValueError("a single line")
        return raw

    return parse


def _language(raw: str) -> str:
    if raw.lower() == "auto":
        return "auto"
    if not _LANGUAGE.match(raw):
        raise ValueError('"auto", a language tag such as "zh" or a name such as "German"')
    return raw


def allowed_models(config: Config) -> tuple[str, ...]:
    """The reply model and the operator's allow-list, in that order."""
    return tuple(dict.fromkeys([config.model.name, *config.model.allowed_models]))


def _render_number(value: object) -> str:
    return repr(value)


def _render_switch(value: object) -> str:
    return "on" if value else "off"


# fmt: off
_KNOWN_SPECS = (
    SettingSpec("threshold", "compress in the agent loop above this share of the context window",
                _float, _render_number, lambda c: c.compression.threshold, "a number",
                bounded=True),
    SettingSpec("target_ratio", "share of the threshold kept verbatim as the recent tail",
                _float, _render_number, lambda c: c.compression.target_ratio, "a number",
                bounded=True),
    SettingSpec("protect_last_n", "most recent messages the compressor tries to keep verbatim",
                _int, _render_number, lambda c: c.compression.protect_last_n, "a whole number",
                bounded=True),
    SettingSpec("hygiene_threshold", "compress before a reply above this share of the window",
                _float, _render_number, lambda c: c.compression.hygiene_threshold, "a number",
                bounded=True),
    SettingSpec("hygiene_hard_message_limit", "compress before a reply at this many messages",
                _int, _render_number, lambda c: c.compression.hygiene_hard_message_limit,
                "a whole number", bounded=True),
    SettingSpec("overnight", "compress big idle sessions during the quiet window",
                _switch, _render_switch, lambda c: c.overnight.enabled, "on | off"),
    SettingSpec("overnight_window", "daily quiet window for overnight compression, local time",
                TimeWindow.parse, str, lambda c: TimeWindow.parse(c.overnight.window),
                "HH:MM-HH:MM"),
    SettingSpec("timezone", "the chat's time zone (quiet window, dates in summaries)",
                check_timezone, str, lambda c: c.overnight.timezone, "an IANA zone"),
    SettingSpec("activation", "when the bot answers: when mentioned, always, or on a keyword",
                _choice("mention", "always", "keyword"), str,
                lambda c: c.chat_defaults.activation, "mention | always | keyword"),
    SettingSpec("keyword", "the word that wakes the bot when activation is keyword",
                _text(MAX_KEYWORD_CHARS, single_line=True), str,
                lambda c: c.chat_defaults.keyword, "a word or phrase"),
    SettingSpec("memory_scope", "one shared session for the chat, or one per member",
                _choice("shared", "per_user"), str, lambda c: c.chat_defaults.memory_scope,
                "shared | per_user"),
    SettingSpec("language", "language of replies and summaries (auto: the chat's own)",
                _language, str, lambda c: c.chat_defaults.language, "auto or a language"),
    SettingSpec("system_prompt", "extra instructions for the bot in this chat",
                _text(MAX_SYSTEM_PROMPT_CHARS), str, lambda c: c.chat_defaults.system_prompt,
                "text"),
    SettingSpec("daily_token_budget", "tokens the chat may use per UTC day (0: unlimited)",
                _int, _render_number, lambda c: c.gateway.daily_token_budget, "a whole number",
                operator_only=True),
    SettingSpec("user_rate_limit_per_minute", "replies per member per minute (0: unlimited)",
                _int, _render_number, lambda c: c.gateway.user_rate_limit_per_minute,
                "a whole number", operator_only=True),
    SettingSpec("model", "the model that answers in this chat (the window follows it)",
                _text(MAX_MODEL_NAME_CHARS, single_line=True), str, lambda c: c.model.name,
                "a model the operator allows", choices=allowed_models),
    SettingSpec("retention_days", "forget messages older than this many days (0: keep them)",
                _int, _render_number, lambda c: c.chat_defaults.retention_days,
                "a whole number of days", bounded=True),
    SettingSpec("context_engine", "the context engine that manages this chat's sessions",
                check_context_engine, str, lambda c: c.compression.context_engine,
                "an engine name", operator_only=True),
)
# fmt: on
SETTINGS: Mapping[str, SettingSpec] = {spec.key: spec for spec in _KNOWN_SPECS}


@dataclass(frozen=True, slots=True)
class ChatSettings:
    """A chat's settings with thread inheritance and defaults applied."""

    threshold: float
    target_ratio: float
    protect_last_n: int
    hygiene_threshold: float
    hygiene_hard_message_limit: int
    overnight: bool
    overnight_window: TimeWindow
    timezone: str
    activation: Activation
    keyword: str | None
    memory_scope: MemoryScope
    language: str
    system_prompt: str | None
    daily_token_budget: int
    user_rate_limit_per_minute: int
    model: str
    retention_days: int
    context_engine: str

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.timezone)


def check_key(key: str, *, enforce_bounds: bool = False) -> str:
    """The normalised key, refused when unknown or (for chat admins) operator-only."""
    spec = SETTINGS.get(key.strip().lower())
    if spec is None:
        raise UnknownSetting(key)
    if enforce_bounds and spec.operator_only:
        raise SettingRestricted(spec.key)
    return spec.key


def parse_setting(key: str, raw: str, config: Config, *, enforce_bounds: bool) -> str:
    """The normalised text to store for `key`; chat admins get enforce_bounds=True."""
    spec = SETTINGS[check_key(key, enforce_bounds=enforce_bounds)]
    return spec.render(_typed(spec, raw, config, enforce_bounds=enforce_bounds))


def _typed(spec: SettingSpec, raw: str, config: Config, *, enforce_bounds: bool) -> object:
    text = raw.strip()
    try:
        value = spec.parse(text)
    except ValueError as err:
        raise InvalidSetting(spec.key, raw, str(err)) from None
    if spec.choices is not None and value not in spec.choices(config):
        raise InvalidSetting(spec.key, raw, " | ".join(spec.choices(config)))
    allowed = allowed_range(spec.key, config, enforce_bounds=enforce_bounds)
    if allowed is not None and value not in allowed:
        raise SettingOutOfBounds(spec.key, spec.render(value), allowed)
    return value


def allowed_range(key: str, config: Config, *, enforce_bounds: bool) -> Range | None:
    """The operator's bounds for chat admins, else the hard range; None for non-numeric keys."""
    spec = SETTINGS[key]
    if enforce_bounds and spec.bounded:
        return config.bounds.range(key)
    return spec.hard


def resolve(
    raw_chat: Mapping[str, str], raw_parent: Mapping[str, str] | None, config: Config
) -> ChatSettings:
    """Typed settings: the chat's own value, else its parent's (threads), else the default."""
    values = {
        key: _resolved(spec, raw_chat, raw_parent, config)[0] for key, spec in SETTINGS.items()
    }
    if values["activation"] == "keyword" and not values["keyword"]:
        values["activation"] = "mention"  # a keyword activation without a keyword could never fire
    return ChatSettings(**values)  # type: ignore[arg-type]


def _resolved(
    spec: SettingSpec,
    raw_chat: Mapping[str, str],
    raw_parent: Mapping[str, str] | None,
    config: Config,
) -> tuple[object, Source]:
    layers: tuple[tuple[Source, Mapping[str, str] | None], ...] = (
        ("chat", raw_chat),
        ("parent", raw_parent),
    )
    for source, layer in layers:
        if layer is None or spec.key not in layer:
            continue
        try:
            # Stored values passed the checks when set; bounds narrowed since then do not undo an
            # operator's deliberate choice, so only types and hard ranges are rechecked here.
            return _typed(spec, layer[spec.key], config, enforce_bounds=False), source
        except SettingError:
            log.warning("ignoring invalid stored setting (key=%s source=%s)", spec.key, source)
    return spec.default(config), "default"


@dataclass(frozen=True, slots=True)
class SettingDescription:
    key: str
    value: str
    source: Source
    default: str
    allowed: str
    description: str
    operator_only: bool

    def __str__(self) -> str:
        origin = {"chat": "set here", "parent": "inherited", "default": "default"}[self.source]
        default = "" if self.source == "default" else f"; default {self.default}"
        lock = "; operators only" if self.operator_only else ""
        return (
            f"{self.key} = {self.value} ({origin}{default}; allowed {self.allowed}{lock})"
            f" — {self.description}"
        )


def describe(
    key: str,
    config: Config,
    raw_chat: Mapping[str, str] | None = None,
    raw_parent: Mapping[str, str] | None = None,
) -> SettingDescription:
    """One key's current value, where it comes from, its default and what a chat admin may set."""
    spec = SETTINGS[check_key(key)]
    value, source = _resolved(spec, raw_chat or {}, raw_parent, config)
    allowed = allowed_range(spec.key, config, enforce_bounds=True)
    return SettingDescription(
        key=spec.key,
        value=_shown(spec, value),
        source=source,
        default=_shown(spec, spec.default(config)),
        allowed=str(allowed) if allowed is not None else spec.expected,
        description=spec.description,
        operator_only=spec.operator_only,
    )


def describe_all(
    config: Config,
    raw_chat: Mapping[str, str] | None = None,
    raw_parent: Mapping[str, str] | None = None,
) -> list[SettingDescription]:
    return [describe(key, config, raw_chat, raw_parent) for key in SETTINGS]


def _shown(spec: SettingSpec, value: object) -> str:
    """The value on one short line: a long system prompt is cut for listings."""
    if value is None:
        return "(none)"
    text = " ".join(spec.render(value).split())
    return text if len(text) <= _MAX_LISTED_CHARS else text[: _MAX_LISTED_CHARS - 1] + "…"


__all__ = [
    "Activation",
    "ChatSettings",
    "InvalidSetting",
    "MemoryScope",
    "SettingDescription",
    "SettingError",
    "SettingOutOfBounds",
    "SettingRestricted",
    "SettingSpec",
    "UnknownSetting",
    "allowed_range",
    "check_key",
    "describe",
    "describe_all",
    "parse_setting",
    "resolve",
]

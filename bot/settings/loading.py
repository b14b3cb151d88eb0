"""load_config: the defaults, overridden by the YAML file, overridden by the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from compactbot.bot.settings.config import SECRET_KEYS, Config, ConfigError

DEFAULT_CONFIG_FILE = Path("config.yaml")

# Environment variable -> dotted config key. Environment wins over the YAML file.
ENV_VARS: dict[str, str] = {
    "TELEGRAM_BOT_TOKEN": "telegram.token",
    "TELEGRAM_API_BASE_URL": "telegram.api_base_url",
    "TELEGRAM_WEBHOOK_URL": "telegram.webhook_url",
    "TELEGRAM_WEBHOOK_LISTEN": "telegram.webhook_listen",
    "TELEGRAM_WEBHOOK_SECRET": "telegram.webhook_secret",
    "DISCORD_BOT_TOKEN": "discord.token",
    "DISCORD_GUILD_ID": "discord.guild_id",
    "OPENAI_API_KEY": "model.api_key",
    "OPENAI_BASE_URL": "model.base_url",
    "COMPACTBOT_MODEL": "model.name",
    "COMPACTBOT_SUMMARY_MODEL": "model.summary_model",
    "COMPACTBOT_CONTEXT_LENGTH": "model.context_length",
    "COMPACTBOT_DB": "storage.database",
    "COMPACTBOT_LOG_LEVEL": "logging.level",
    "COMPACTBOT_LOG_FORMAT": "logging.format",
    "COMPACTBOT_METRICS_LISTEN": "metrics.listen",
    "COMPACTBOT_METRICS_CHAT_LABELS": "metrics.chat_labels",
    "COMPACTBOT_TURN_LEASE_SECONDS": "gateway.turn_lease_seconds",
    "COMPACTBOT_CONSOLE": "console.enabled",
    "COMPACTBOT_CONSOLE_TOKENS": "console.operator_tokens",
    "COMPACTBOT_CONSOLE_PUBLIC_URL": "console.public_url",
    "COMPACTBOT_CONSOLE_TRUSTED_PROXIES": "console.trusted_proxies",
}
CONFIG_PATH_ENV = "COMPACTBOT_CONFIG"


def load_config(env: Mapping[str, str] | None = None, path: Path | None = None) -> Config:
    """Validated configuration: env overrides the YAML file, which overrides the defaults."""
    env = os.environ if env is None else env
    data = _read_yaml(_config_path(env, path))
    from_env: dict[tuple[str, ...], str] = {}
    for name, dotted in ENV_VARS.items():
        value = env.get(name, "")
        if value.strip():  # an empty line copied from .env.example means "unset"
            loc = tuple(dotted.split("."))
            _put(data, loc, value.strip())
            from_env[loc] = name
    try:
        return Config.model_validate(data)
    except ValidationError as err:
        raise _translate(err, from_env) from None


def _config_path(env: Mapping[str, str], path: Path | None) -> Path | None:
    if path is not None:
        if not path.is_file():
            raise ConfigError("config file", str(path), "an existing YAML file")
        return path
    named = env.get(CONFIG_PATH_ENV, "").strip()
    if named:
        if not Path(named).is_file():
            raise ConfigError(CONFIG_PATH_ENV, named, "the path of an existing YAML file")
        return Path(named)
    return DEFAULT_CONFIG_FILE if DEFAULT_CONFIG_FILE.is_file() else None


def _read_yaml(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "?"
        raise ConfigError(
            str(path), where, f"valid YAML ({getattr(err, 'problem', err)})"
        ) from None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(str(path), type(err).__name__, "a readable UTF-8 file") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise ConfigError(str(path), type(loaded).__name__, "a mapping of sections") from None
    for dotted, variable in SECRET_KEYS.items():
        section, key = dotted.split(".")
        if isinstance(loaded.get(section), dict) and key in loaded[section]:
            raise ConfigError(dotted, "***", f"set in the environment as {variable}, not in YAML")
    return loaded


def _put(data: dict[str, Any], loc: tuple[str, ...], value: str) -> None:
    section = data.get(loc[0])
    if not isinstance(section, dict):
        section = {}
    data[loc[0]] = {**section, loc[1]: value}


def _translate(err: ValidationError, from_env: Mapping[tuple[str, ...], str]) -> ConfigError:
    first = err.errors()[0]
    loc = tuple(str(part) for part in first["loc"])
    key = ".".join(loc) or "config"
    if first["type"] == "extra_forbidden":
        known = ", ".join(_known_keys(loc[:-1]))
        return ConfigError(key, first.get("input"), f"one of the known keys: {known}")
    message = first["msg"]
    for prefix in ("Value error, ", "Input should be ", "Assertion failed, "):
        message = message.removeprefix(prefix)
    source = from_env.get(loc[:2])
    return ConfigError(key, first.get("input"), message, source=source)


def _known_keys(loc: tuple[str, ...]) -> list[str]:
    model: type[BaseModel] = Config
    for part in loc:
        annotation = model.model_fields[part].annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)

"""The configuration's sections, their defaults and bounds, and the error a bad value raises."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    field_validator,
    model_validator,
)

from compactbot.bot.settings.values import (
    HARD_RANGES,
    Range,
    check_chat_keys,
    check_console_tokens,
    check_context_engine,
    check_database,
    check_host_port,
    check_http_url,
    check_operator_ids,
    check_timezone,
    check_webhook_secret,
    check_window,
    comma_list,
)
from compactbot.compression.redact import redact

DEFAULT_DB = "./data/compactbot.db"
# Window assumed when neither the config nor the endpoint's model list gives one (SPEC 2).
DEFAULT_CONTEXT_LENGTH = 128_000
CONFIG_ERROR_EXIT_STATUS = 2
_MAX_SHOWN_VALUE_CHARS = 80

# Secrets come from the environment only, so a config file can be shared or committed safely.
SECRET_KEYS: dict[str, str] = {
    "telegram.token": "TELEGRAM_BOT_TOKEN",
    "telegram.webhook_secret": "TELEGRAM_WEBHOOK_SECRET",
    "discord.token": "DISCORD_BOT_TOKEN",
    "model.api_key": "OPENAI_API_KEY",
    "console.operator_tokens": "COMPACTBOT_CONSOLE_TOKENS",
}
_URL_KEYS = frozenset(
    {
        "model.base_url",
        "telegram.api_base_url",
        "telegram.webhook_url",
        "storage.database",
        "console.public_url",
    }
)


class ConfigError(Exception):
    """A configuration value is wrong; str() is the one line shown to the operator."""

    def __init__(self, key: str, value: object, expected: str, *, source: str | None = None):
        self.key = key
        self.expected = " ".join(expected.split())
        self.source = source  # the environment variable the value came from, if any
        self.value = _shown(key, value)
        super().__init__(str(self))

    def __str__(self) -> str:
        where = f"{self.key} ({self.source})" if self.source else self.key
        return f"config error: {where} = {self.value}: expected {self.expected}"


@contextmanager
def exit_on_config_error() -> Iterator[None]:
    """Turn a ConfigError into its one line on stderr and exit status 2 (CLI start-up)."""
    try:
        yield
    except ConfigError as err:
        print(str(err), file=sys.stderr)
        raise SystemExit(CONFIG_ERROR_EXIT_STATUS) from None


def _shown(key: str, value: object) -> str:
    if value is not None and (key in SECRET_KEYS or isinstance(value, SecretStr)):
        return "'***'"
    if key in _URL_KEYS and isinstance(value, str):
        value = _without_credentials(value)
    # A token pasted into the wrong setting must not be echoed by the line that rejects it.
    if isinstance(value, str) and redact(value) != value:
        return "'***'"
    text = repr(value)
    return (
        text if len(text) <= _MAX_SHOWN_VALUE_CHARS else text[: _MAX_SHOWN_VALUE_CHARS - 3] + "..."
    )


def _without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"***@{host}" + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc).geturl()


def _in(key: str) -> AfterValidator:
    allowed = HARD_RANGES[key]

    def check(value: float) -> float:
        if value not in allowed:
            raise ValueError(f"a value in {allowed}")
        return value

    return AfterValidator(check)


HttpUrl = Annotated[str | None, AfterValidator(check_http_url)]
PositiveInt = Annotated[int, Field(ge=1)]
NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]
NonEmpty = Annotated[str, Field(min_length=1)]


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ModelConfig(_Section):
    name: NonEmpty = "gpt-4o-mini"
    summary_model: NonEmpty | None = None  # None: summaries use `name`
    context_length: Annotated[int, Field(ge=256)] | None = None  # None: ask the endpoint
    max_tokens: PositiveInt | None = None
    request_timeout_seconds: PositiveFloat = 60.0
    # One reply call, retries included, ends within this; the chat is told at once after it.
    reply_deadline_seconds: PositiveFloat = 30.0
    # One summary request (the fallback model gets its own); compaction fails open after it.
    summary_timeout_seconds: PositiveFloat = 60.0
    max_retries: Annotated[int, Field(ge=0, le=10)] = 2
    base_url: HttpUrl = None  # None with no api_key: the built-in offline model
    api_key: SecretStr | None = None
    vision: bool = False  # the reply model accepts image parts
    # Other models a chat may pick with /config model; `name` is always allowed.
    allowed_models: list[NonEmpty] = []
    # Windows of allowed models; a model not listed is asked of the endpoint, else gets ours.
    context_lengths: dict[str, Annotated[int, Field(ge=256)]] = {}


class MediaConfig(_Section):
    max_file_bytes: PositiveInt = 5 * 1024 * 1024  # nothing larger is fetched or sent on
    max_document_chars: PositiveInt = 20_000


class CompressionConfig(_Section):
    enabled: bool = True
    threshold: Annotated[float, _in("threshold")] = 0.50
    target_ratio: Annotated[float, _in("target_ratio")] = 0.20
    protect_first_n: Annotated[int, Field(ge=0, le=100)] = 3
    protect_last_n: Annotated[int, _in("protect_last_n")] = 20
    abort_on_summary_failure: bool = False
    # Most of the window the summary may take for pins, rules, preferences and open actions.
    memory_cap_ratio: Annotated[float, Field(gt=0, le=1)] = 0.10
    context_engine: Annotated[str, AfterValidator(check_context_engine)] = "compressor"
    hygiene_threshold: Annotated[float, _in("hygiene_threshold")] = 0.85
    hygiene_hard_message_limit: Annotated[int, _in("hygiene_hard_message_limit")] = 5000
    hygiene_max_wait_seconds: PositiveFloat = 10.0
    lock_ttl_seconds: PositiveFloat = 300.0


class OvernightConfig(_Section):
    enabled: bool = True
    window: Annotated[str, AfterValidator(check_window)] = "02:00-05:00"
    timezone: Annotated[str, AfterValidator(check_timezone)] = "UTC"
    min_ratio: Annotated[float, Field(gt=0, lt=1)] = 0.30
    idle_minutes: NonNegativeInt = 60
    concurrency: PositiveInt = 1
    jitter_seconds: Annotated[float, Field(ge=0)] = 30.0


DEFAULT_PERSONA = (
    "You are compactbot, a helpful assistant in a group chat. Several people talk here; each "
    "message starts with the speaker's name in brackets. Answer the latest message concisely."
)


class GatewayConfig(_Section):
    max_concurrent_chats: PositiveInt = 32
    # `compactbot worker`: a dead worker's turn is taken over this long after its last renewal.
    turn_lease_seconds: Annotated[float, Field(ge=2, le=600)] = 30.0
    allowed_chats: Annotated[tuple[str, ...], AfterValidator(check_chat_keys)] = ("*",)
    operators: Annotated[tuple[str, ...], AfterValidator(check_operator_ids)] = ()
    # Telegram answers whether a member is an admin; a demotion must bite within a minute even
    # where the bot cannot see member updates (SPEC 16).
    admin_cache_seconds: Annotated[int, Field(ge=0, le=60)] = 60
    # Bounded by default (SPEC 17): a public bot must not be run up by whoever finds it.
    user_rate_limit_per_minute: Annotated[int, _in("user_rate_limit_per_minute")] = 20
    daily_token_budget: Annotated[int, _in("daily_token_budget")] = 2_000_000  # 0: unlimited
    # Operator-only; 0: none. A thread or forum topic counts toward its parent chat.
    chat_rate_limit_per_minute: NonNegativeInt = 60  # answers per chat per minute
    member_daily_token_budget: NonNegativeInt = 500_000  # per member per chat per UTC day
    global_daily_token_budget: NonNegativeInt = 50_000_000  # every chat together per UTC day
    persona: NonEmpty = DEFAULT_PERSONA


class TelegramConfig(_Section):
    token: SecretStr | None = None
    api_base_url: HttpUrl = None  # a self-hosted Bot API server, e.g. http://127.0.0.1:8081/bot
    webhook_url: HttpUrl = None  # set: webhook mode; unset: polling
    webhook_listen: Annotated[str, AfterValidator(check_host_port)] = "127.0.0.1:8443"
    webhook_secret: Annotated[SecretStr | None, AfterValidator(check_webhook_secret)] = None

    @property
    def webhook_host(self) -> str:
        return self.webhook_listen.rpartition(":")[0].strip("[]")

    @property
    def webhook_port(self) -> int:
        return int(self.webhook_listen.rpartition(":")[2])


class DiscordConfig(_Section):
    token: SecretStr | None = None
    guild_id: PositiveInt | None = None  # set: slash commands sync to this guild only (instant)


class StorageConfig(_Section):
    # a path, ":memory:", "sqlite:///path" or "postgresql://user@host/db" (SPEC 4)
    database: Annotated[NonEmpty, AfterValidator(check_database)] = DEFAULT_DB


class LoggingConfig(_Section):
    level: Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"] = "INFO"
    format: Literal["plain", "json"] = "plain"  # json: one object per line, for log shippers

    @field_validator("level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("format", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value


class MetricsConfig(_Section):
    # host:port of /metrics, /healthz and /readyz; None: no operator port at all.
    listen: Annotated[str, AfterValidator(check_host_port)] | None = None
    # Chat keys as labels (compactbot_chat_*): one series per chat, so off unless asked for.
    chat_labels: bool = False

    @property
    def host(self) -> str:
        assert self.listen is not None
        return self.listen.rpartition(":")[0].strip("[]")

    @property
    def port(self) -> int:
        assert self.listen is not None
        return int(self.listen.rpartition(":")[2])


# Where the operator endpoint listens when the console is on and metrics.listen is not set.
DEFAULT_CONSOLE_LISTEN = "127.0.0.1:8787"


class ConsoleConfig(_Section):
    """The operator web console (SPEC 18), served on the operator endpoint; off unless enabled."""

    enabled: bool = False
    # "name:token,name:token"; from COMPACTBOT_CONSOLE_TOKENS only, kept hashed once loaded.
    operator_tokens: Annotated[SecretStr | None, AfterValidator(check_console_tokens)] = None
    # The address people open (behind a reverse proxy: its https:// URL); sign-in links use it.
    public_url: HttpUrl = None
    # Peers whose X-Forwarded-Proto and X-Forwarded-For are believed (the reverse proxy).
    trusted_proxies: Annotated[tuple[str, ...], BeforeValidator(comma_list)] = ()
    session_hours: Annotated[float, Field(gt=0, le=720)] = 12.0
    link_minutes: Annotated[float, Field(gt=0, le=1440)] = 15.0
    sign_in_attempts_per_minute: Annotated[int, Field(ge=1, le=1000)] = 10


class ChatDefaults(_Section):
    """Defaults of the per-chat keys that have no home in another section."""

    activation: Literal["mention", "always", "keyword"] = "mention"
    keyword: NonEmpty | None = None
    memory_scope: Literal["shared", "per_user"] = "shared"
    language: NonEmpty = "auto"  # "auto": the language the chat is written in
    system_prompt: NonEmpty | None = None  # None: gateway.persona alone
    retention_days: Annotated[int, Field(ge=0)] = 0  # 0: keep; else the hourly sweep forgets


def _bounds(key: str) -> AfterValidator:
    hard = HARD_RANGES[key]

    def check(pair: tuple[float, float]) -> tuple[float, float]:
        low, high = pair
        if low > high:
            raise ValueError(f"[low, high] with low <= high, within {hard}")
        if low not in hard or high not in hard:
            raise ValueError(f"[low, high] within {hard}")
        return pair

    return AfterValidator(check)


class Bounds(_Section):
    """What a chat admin may set per chat; operators (CLI, operator ids) are not bounded."""

    threshold: Annotated[tuple[float, float], _bounds("threshold")] = (0.30, 0.90)
    target_ratio: Annotated[tuple[float, float], _bounds("target_ratio")] = (0.10, 0.80)
    protect_last_n: Annotated[tuple[int, int], _bounds("protect_last_n")] = (5, 100)
    hygiene_threshold: Annotated[tuple[float, float], _bounds("hygiene_threshold")] = (0.50, 0.95)
    hygiene_hard_message_limit: Annotated[
        tuple[int, int], _bounds("hygiene_hard_message_limit")
    ] = (500, 20_000)
    retention_days: Annotated[tuple[int, int], _bounds("retention_days")] = (0, 36_500)

    def range(self, key: str) -> Range:
        low, high = getattr(self, key)
        return Range(low, high)


class Config(_Section):
    model: ModelConfig = ModelConfig()
    media: MediaConfig = MediaConfig()
    compression: CompressionConfig = CompressionConfig()
    overnight: OvernightConfig = OvernightConfig()
    gateway: GatewayConfig = GatewayConfig()
    telegram: TelegramConfig = TelegramConfig()
    discord: DiscordConfig = DiscordConfig()
    storage: StorageConfig = StorageConfig()
    logging: LoggingConfig = LoggingConfig()
    metrics: MetricsConfig = MetricsConfig()
    console: ConsoleConfig = ConsoleConfig()
    chat_defaults: ChatDefaults = ChatDefaults()
    bounds: Bounds = Bounds()

    @model_validator(mode="after")
    def _consistent(self) -> Config:
        for key in Bounds.model_fields:
            section = "compression" if hasattr(self.compression, key) else "chat_defaults"
            default = getattr(getattr(self, section), key)
            if default not in self.bounds.range(key):
                raise ConfigError(
                    f"{section}.{key}",
                    default,
                    f"a value within bounds.{key} {self.bounds.range(key)}",
                )
        if self.telegram.webhook_url and self.telegram.webhook_secret is None:
            raise ConfigError(
                "telegram.webhook_secret",
                None,
                "a secret in TELEGRAM_WEBHOOK_SECRET when TELEGRAM_WEBHOOK_URL is set",
            )
        if self.chat_defaults.activation == "keyword" and self.chat_defaults.keyword is None:
            raise ConfigError(
                "chat_defaults.keyword",
                None,
                'a keyword when chat_defaults.activation is "keyword"',
            )
        return self

    @property
    def operator_listen(self) -> str | None:
        """host:port of the operator endpoint: metrics.listen, else the console's default."""
        if self.metrics.listen is None and self.console.enabled:
            return DEFAULT_CONSOLE_LISTEN
        return self.metrics.listen

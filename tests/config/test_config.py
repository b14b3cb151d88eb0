"""Loading the configuration: precedence, validation errors as one line, secrets never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from compactbot.bot.settings.config import Config, ConfigError, exit_on_config_error
from compactbot.bot.settings.loading import load_config

REPO_ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-live-0123456789abcdef"


@pytest.fixture(autouse=True)
def _no_ambient_config_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # load_config falls back to ./config.yaml; run every test where there is none.
    monkeypatch.chdir(tmp_path)


def _yaml(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _error(env: dict[str, str] | None = None, yaml_text: str | None = None) -> ConfigError:
    path = _yaml(Path.cwd(), yaml_text) if yaml_text is not None else None
    with pytest.raises(ConfigError) as caught:
        load_config(env=env or {}, path=path)
    return caught.value


def test_example_file_loads_and_equals_the_defaults() -> None:
    assert load_config(env={}, path=REPO_ROOT / "config.example.yaml") == Config()


def test_no_file_and_no_env_gives_defaults() -> None:
    config = load_config(env={})

    assert config == Config()
    assert config.model.name == "gpt-4o-mini"
    assert config.storage.database == "./data/compactbot.db"
    assert config.telegram.webhook_listen == "127.0.0.1:8443"


@pytest.mark.parametrize(
    ("yaml_text", "env", "key"),
    [
        ("compression:\n  threshold: 1.5\n", {}, "compression.threshold"),
        ("compression:\n  target_ratio: abc\n", {}, "compression.target_ratio"),
        (None, {"COMPACTBOT_CONTEXT_LENGTH": "-5"}, "model.context_length"),
        ('overnight:\n  window: "25:00-03:00"\n', {}, "overnight.window"),
        ("overnight:\n  timezone: Mars/Base\n", {}, "overnight.timezone"),
        ("bounds:\n  threshold: [0.9, 0.3]\n", {}, "bounds.threshold"),
        (
            "compression:\n  hygiene_hard_message_limit: 0\n",
            {},
            "compression.hygiene_hard_message_limit",
        ),
        ("gateway:\n  operators: [alice]\n", {}, "gateway.operators"),
        ("gateway:\n  max_concurrent_chats: 0\n", {}, "gateway.max_concurrent_chats"),
        # A demoted admin must lose rights within a minute (SPEC 16).
        ("gateway:\n  admin_cache_seconds: 300\n", {}, "gateway.admin_cache_seconds"),
        (None, {"COMPACTBOT_LOG_LEVEL": "chatty"}, "logging.level"),
        ("compression:\n  treshold: 0.5\n", {}, "compression.treshold"),
    ],
)
def test_wrong_value_is_one_line_naming_the_key(
    yaml_text: str | None, env: dict[str, str], key: str
) -> None:
    err = _error(env, yaml_text)

    assert err.key.startswith(key)
    message = str(err)
    assert message.startswith(f"config error: {key}")
    assert "expected" in message and "\n" not in message


def test_env_error_names_the_variable_too() -> None:
    message = str(_error({"COMPACTBOT_CONTEXT_LENGTH": "-5"}))

    assert "model.context_length (COMPACTBOT_CONTEXT_LENGTH) = '-5'" in message


def test_default_outside_bounds_is_refused() -> None:
    err = _error(yaml_text="compression:\n  threshold: 0.95\n")

    assert err.key == "compression.threshold"
    assert "bounds.threshold 0.30–0.90" in str(err)


def test_env_overrides_yaml() -> None:
    path = _yaml(Path.cwd(), "model:\n  name: from-yaml\n  context_length: 32000\n")

    config = load_config(env={"COMPACTBOT_MODEL": "from-env"}, path=path)

    assert config.model.name == "from-env"
    assert config.model.context_length == 32000


def test_config_path_comes_from_env_or_the_working_directory(tmp_path: Path) -> None:
    named = tmp_path / "elsewhere.yaml"
    named.write_text("model:\n  name: named\n", encoding="utf-8")
    _yaml(tmp_path, "model:\n  name: local\n")

    assert load_config(env={"COMPACTBOT_CONFIG": str(named)}).model.name == "named"
    assert load_config(env={}).model.name == "local"


def test_missing_config_file_named_in_env_is_an_error() -> None:
    err = _error({"COMPACTBOT_CONFIG": "/nonexistent/compactbot.yaml"})

    assert err.key == "COMPACTBOT_CONFIG"


def test_empty_env_values_mean_unset() -> None:
    assert load_config(env={"COMPACTBOT_MODEL": "", "COMPACTBOT_CONTEXT_LENGTH": " "}) == Config()


def test_secret_never_appears_in_repr_or_errors() -> None:
    config = load_config(env={"OPENAI_API_KEY": SECRET, "TELEGRAM_BOT_TOKEN": SECRET})

    assert config.model.api_key is not None
    assert config.model.api_key.get_secret_value() == SECRET
    assert SECRET not in repr(config) and SECRET not in str(config)
    bad_secret = _error({"TELEGRAM_WEBHOOK_SECRET": SECRET + " with spaces"})
    assert SECRET not in str(bad_secret) and "***" in str(bad_secret)


def test_secret_in_yaml_is_refused_without_echoing_it() -> None:
    err = _error(yaml_text=f"model:\n  api_key: {SECRET}\n")

    assert err.key == "model.api_key"
    assert "OPENAI_API_KEY" in str(err) and SECRET not in str(err)


def test_credentials_in_a_url_are_masked_in_errors() -> None:
    err = _error({"OPENAI_BASE_URL": f"ftp://user:{SECRET}@example.com/v1"})

    assert SECRET not in str(err)


def test_webhook_mode_requires_a_secret() -> None:
    err = _error({"TELEGRAM_WEBHOOK_URL": "https://bot.example.com/telegram"})

    assert err.key == "telegram.webhook_secret"


def test_webhook_settings_parse() -> None:
    config = load_config(
        env={
            "TELEGRAM_WEBHOOK_URL": "https://bot.example.com/telegram",
            "TELEGRAM_WEBHOOK_SECRET": "s3cret_token-1",
            "TELEGRAM_WEBHOOK_LISTEN": "0.0.0.0:9000",
            "DISCORD_GUILD_ID": "123456789012345678",
        }
    )

    assert (config.telegram.webhook_host, config.telegram.webhook_port) == ("0.0.0.0", 9000)
    assert config.discord.guild_id == 123456789012345678


def test_invalid_yaml_is_one_line() -> None:
    err = _error(yaml_text="model: [unclosed\n")

    assert "expected valid YAML" in str(err) and "\n" not in str(err)


def test_config_is_frozen() -> None:
    config = Config()

    with pytest.raises(ValueError):
        config.model.name = "other"


def test_exit_on_config_error_prints_one_line_and_exits_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited, exit_on_config_error():
        load_config(env={"COMPACTBOT_CONTEXT_LENGTH": "-5"})

    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("config error: model.context_length")


@pytest.mark.parametrize(
    "value",
    [
        "./data/x.db",
        "sqlite:///var/lib/bot.db",
        "postgresql://bot@db/compactbot",
        "postgres://db/x",
    ],
)
def test_database_accepts_paths_sqlite_and_postgresql_urls(value: str) -> None:
    assert load_config(env={"COMPACTBOT_DB": value}).storage.database == value


def test_database_with_another_scheme_is_one_line_naming_the_key_without_credentials() -> None:
    err = _error({"COMPACTBOT_DB": f"mysql://bot:{SECRET}@db/compactbot"})

    assert err.key == "storage.database" and err.source == "COMPACTBOT_DB"
    assert "postgresql://" in str(err) and SECRET not in str(err)

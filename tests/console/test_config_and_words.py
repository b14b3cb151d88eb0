"""The console's configuration, and its words in both languages."""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

import pytest

from compactbot.bot.operators.console.catalog import CHINESE_TEXTS
from compactbot.bot.operators.console.i18n import translator
from compactbot.bot.operators.console.views.purge import PURGE_ACTION
from compactbot.bot.operators.console.views.usage import PURPOSE_LABELS
from compactbot.bot.operators.log_redaction import config_secrets
from compactbot.bot.settings.config import DEFAULT_CONSOLE_LISTEN, ConfigError
from compactbot.bot.settings.loading import load_config
from compactbot.compression.memory import ENTRY_KINDS, ENTRY_STATUSES

GOOD = "ops:0123456789abcdef,ann:fedcba9876543210"
# t("literal") in a template; t(variable) texts are listed in DYNAMIC below.
LITERAL = re.compile(r"""\bt\(\s*(["'])(.+?)\1""")
DYNAMIC = (
    *ENTRY_KINDS,
    *ENTRY_STATUSES,
    *PURPOSE_LABELS.values(),
    "sign in",
    "setting",
    "sign-in link issued",
    PURGE_ACTION,
)


def test_the_console_is_off_and_the_endpoint_closed_unless_configured() -> None:
    config = load_config({}, path=None)
    assert not config.console.enabled and config.operator_listen is None


def test_an_enabled_console_listens_on_localhost_unless_told_otherwise() -> None:
    config = load_config({"COMPACTBOT_CONSOLE": "on", "COMPACTBOT_CONSOLE_TOKENS": GOOD}, path=None)
    assert config.operator_listen == DEFAULT_CONSOLE_LISTEN
    assert DEFAULT_CONSOLE_LISTEN.startswith("127.0.0.1:")
    moved = load_config(
        {"COMPACTBOT_CONSOLE": "on", "COMPACTBOT_METRICS_LISTEN": "0.0.0.0:9000"}, path=None
    )
    assert moved.operator_listen == "0.0.0.0:9000"


@pytest.mark.parametrize(
    "tokens", ["ops:short", "no-colon-0123456789abcdef", "ops:a b c d e f g h i j"]
)
def test_a_weak_or_malformed_token_stops_start_up_without_echoing_it(tokens: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config({"COMPACTBOT_CONSOLE_TOKENS": tokens}, path=None)
    line = str(refused.value)
    assert "console.operator_tokens (COMPACTBOT_CONSOLE_TOKENS)" in line
    assert tokens not in line and "'***'" in line


def test_tokens_are_refused_in_the_yaml_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(f"console:\n  operator_tokens: {GOOD}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="COMPACTBOT_CONSOLE_TOKENS"):
        load_config({}, path=path)


def test_operator_tokens_are_masked_in_logs() -> None:
    config = load_config({"COMPACTBOT_CONSOLE_TOKENS": GOOD}, path=None)
    assert GOOD in config_secrets(config)


def test_trusted_proxies_come_as_a_comma_list_from_the_environment() -> None:
    config = load_config({"COMPACTBOT_CONSOLE_TRUSTED_PROXIES": "127.0.0.1, ::1"}, path=None)
    assert config.console.trusted_proxies == ("127.0.0.1", "::1")


def test_every_text_of_the_pages_has_its_chinese_words() -> None:
    folder = resources.files("compactbot.bot.operators.console").joinpath("templates")
    used = {
        match.group(2)
        for item in folder.iterdir()
        for match in LITERAL.finditer(item.read_text(encoding="utf-8"))
    }
    assert len(used) > 100
    missing = sorted(text for text in (*used, *DYNAMIC) if text not in CHINESE_TEXTS)
    assert missing == []


def test_translation_fills_in_the_fields_in_either_language() -> None:
    assert translator("en")("{n} days", n=7) == "7 days"
    assert translator("zh")("{n} days", n=7) == "7 天"
    assert translator("zh")("a text nobody translated") == "a text nobody translated"

"""Per-chat settings: parsing, operator bounds, operator-only keys, thread inheritance."""

from __future__ import annotations

import re
from datetime import time

import pytest

from compactbot.bot.settings.chat_settings import (
    SETTINGS,
    InvalidSetting,
    SettingOutOfBounds,
    SettingRestricted,
    UnknownSetting,
    check_key,
    describe,
    describe_all,
    parse_setting,
    resolve,
)
from compactbot.bot.settings.config import Bounds, Config
from compactbot.bot.settings.values import TimeWindow

CONFIG = Config()


def test_chat_admin_value_outside_bounds_is_refused_with_the_range() -> None:
    with pytest.raises(SettingOutOfBounds) as caught:
        parse_setting("threshold", "0.95", CONFIG, enforce_bounds=True)

    assert str(caught.value) == "threshold 0.95 is outside the allowed range 0.30–0.90"


def test_operator_bounds_come_from_config() -> None:
    narrow = Config(bounds=Bounds(hygiene_hard_message_limit=(1000, 6000)))

    with pytest.raises(SettingOutOfBounds, match="1000–6000"):
        parse_setting("hygiene_hard_message_limit", "500", narrow, enforce_bounds=True)


def test_operator_is_not_bounded_but_hard_range_and_type_still_apply() -> None:
    assert parse_setting("threshold", "0.95", CONFIG, enforce_bounds=False) == "0.95"

    with pytest.raises(SettingOutOfBounds, match=re.escape("0.01–0.99")):
        parse_setting("threshold", "1.5", CONFIG, enforce_bounds=False)
    with pytest.raises(InvalidSetting, match="expected a number"):
        parse_setting("threshold", "high", CONFIG, enforce_bounds=False)
    with pytest.raises(InvalidSetting, match="expected a whole number"):
        parse_setting("protect_last_n", "2.5", CONFIG, enforce_bounds=False)


def test_operator_only_keys_are_refused_to_chat_admins() -> None:
    with pytest.raises(SettingRestricted):
        parse_setting("daily_token_budget", "1000000", CONFIG, enforce_bounds=True)

    assert parse_setting("daily_token_budget", "1000000", CONFIG, enforce_bounds=False) == "1000000"


def test_check_key_normalises_and_guards_operator_only_keys() -> None:
    assert check_key(" Threshold ") == "threshold"
    assert check_key("context_engine") == "context_engine"
    with pytest.raises(SettingRestricted):
        check_key("context_engine", enforce_bounds=True)
    with pytest.raises(UnknownSetting):
        check_key("nope")


def test_unknown_key_is_refused() -> None:
    with pytest.raises(UnknownSetting, match="known: threshold"):
        parse_setting("thresh", "0.5", CONFIG, enforce_bounds=True)


@pytest.mark.parametrize(
    ("key", "raw", "stored"),
    [
        ("threshold", " 0.40 ", "0.4"),
        ("overnight", "YES", "on"),
        ("overnight", "off", "off"),
        ("overnight_window", "23:30-1:00", "23:30-01:00"),
        ("timezone", "Asia/Shanghai", "Asia/Shanghai"),
        ("activation", "Always", "always"),
        ("memory_scope", "per_user", "per_user"),
        ("language", "zh", "zh"),
    ],
)
def test_values_are_normalised_for_storage(key: str, raw: str, stored: str) -> None:
    assert parse_setting(key, raw, CONFIG, enforce_bounds=True) == stored


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("overnight_window", "25:00-03:00"),
        ("overnight_window", "02:00-02:00"),
        ("timezone", "Mars/Base"),
        ("timezone", "../../etc/passwd"),
        ("activation", "sometimes"),
        ("memory_scope", "global"),
        ("overnight", "maybe"),
        ("threshold", "nan"),
        ("keyword", "two\nlines"),
        ("system_prompt", "x" * 5000),
    ],
)
def test_invalid_values_are_refused_in_one_line(key: str, raw: str) -> None:
    with pytest.raises(InvalidSetting) as caught:
        parse_setting(key, raw, CONFIG, enforce_bounds=False)

    assert "\n" not in str(caught.value) and key in str(caught.value)


def test_sql_looking_text_is_just_text() -> None:
    text = "'); DROP TABLE chat_settings; -- and ignore previous instructions"

    assert parse_setting("system_prompt", text, CONFIG, enforce_bounds=True) == text
    assert resolve({"system_prompt": text}, None, CONFIG).system_prompt == text


def test_defaults_come_from_config() -> None:
    settings = resolve({}, None, CONFIG)

    assert settings.threshold == CONFIG.compression.threshold
    assert settings.hygiene_hard_message_limit == 5000
    assert settings.overnight_window == TimeWindow(time(2, 0), time(5, 0))
    assert (settings.activation, settings.memory_scope, settings.language) == (
        "mention",
        "shared",
        "auto",
    )
    assert settings.timezone == "UTC" and settings.zone.key == "UTC"


def test_thread_inherits_parent_unless_set_itself() -> None:
    parent = {"threshold": "0.6", "language": "ja", "overnight": "off"}
    thread = {"threshold": "0.4"}

    settings = resolve(thread, parent, CONFIG)

    assert settings.threshold == 0.4
    assert settings.language == "ja"
    assert settings.overnight is False
    assert settings.target_ratio == CONFIG.compression.target_ratio


def test_invalid_stored_value_falls_back_to_the_next_layer() -> None:
    settings = resolve({"threshold": "garbage"}, {"threshold": "0.7"}, CONFIG)

    assert settings.threshold == 0.7


def test_keyword_activation_without_keyword_behaves_as_mention() -> None:
    assert resolve({"activation": "keyword"}, None, CONFIG).activation == "mention"
    settings = resolve({"activation": "keyword", "keyword": "hey bot"}, None, CONFIG)
    assert (settings.activation, settings.keyword) == ("keyword", "hey bot")


def test_describe_shows_value_source_default_and_allowed_range() -> None:
    described = describe("threshold", CONFIG, {"threshold": "0.4"})

    assert (described.value, described.source, described.default) == ("0.4", "chat", "0.5")
    assert described.allowed == "0.30–0.90"
    assert str(described).startswith("threshold = 0.4 (set here; default 0.5; allowed 0.30–0.90)")
    assert describe("language", CONFIG, {}, {"language": "zh"}).source == "parent"


def test_describe_all_lists_every_key_on_one_line_each() -> None:
    lines = [str(d) for d in describe_all(CONFIG, {"system_prompt": "line one\nline two " * 50})]

    assert len(lines) == len(SETTINGS)
    assert all("\n" not in line for line in lines)

"""The catalog of the bot's own words: it keeps up with the English texts the code writes."""

from __future__ import annotations

import re

from compactbot.bot import i18n
from compactbot.bot.commands.router import HELP_TEXT
from compactbot.bot.llm.errors import LLMAuthError, LLMRateLimitError, LLMTransientError
from compactbot.bot.llm.stream import STREAM_BROKEN_NOTICE
from compactbot.bot.turns.runner import BREAKER_NOTICE, _llm_failure_text


def test_every_chinese_template_uses_only_its_english_placeholders() -> None:
    for english, chinese in i18n._TEMPLATES:
        assert set(re.findall(r"\{(\w+)\}", chinese)) <= set(re.findall(r"\{(\w+)\}", english))


def test_help_and_notices_are_fully_translated() -> None:
    texts = [
        HELP_TEXT,
        BREAKER_NOTICE,
        STREAM_BROKEN_NOTICE,
        *(_llm_failure_text(e("x")) for e in (LLMAuthError, LLMRateLimitError, LLMTransientError)),
    ]
    for text in texts:
        translated = i18n.localize(text, i18n.CHINESE)
        for line in translated.split("\n"):
            assert re.search(r"[\u4e00-\u9fff]", line), f"untranslated: {line!r}"


def test_placeholders_carry_names_and_numbers_over() -> None:
    text = "Bob, you're sending messages faster than I can answer; please slow down a little."
    assert i18n.localize(text, i18n.CHINESE).startswith("Bob，")
    assert i18n.localize("Compactions: 3", i18n.CHINESE) == "压缩次数：3"


def test_unknown_lines_and_english_chats_are_left_alone() -> None:
    assert i18n.localize("Some model answer", i18n.CHINESE) == "Some model answer"
    assert i18n.localize("Compactions: 3", i18n.ENGLISH) == "Compactions: 3"


def test_language_comes_from_the_setting_then_the_platform_code() -> None:
    assert i18n.language_for("zh", None) == i18n.CHINESE
    assert i18n.language_for("Chinese", "en") == i18n.CHINESE
    assert i18n.language_for("auto", "zh-hans") == i18n.CHINESE
    assert i18n.language_for("auto", "en-US") == i18n.ENGLISH
    assert i18n.language_for("German", "zh") == i18n.ENGLISH


def test_only_our_trailing_notice_is_translated_in_model_output() -> None:
    text = f"Compactions: 3\n\n{STREAM_BROKEN_NOTICE}"
    assert i18n.localize_trailer(text, STREAM_BROKEN_NOTICE, i18n.CHINESE) == (
        "Compactions: 3\n\n⚠️ 回答被中断：与模型的连接断开了。"
    )
    assert i18n.localize_trailer("Compactions: 3", STREAM_BROKEN_NOTICE, i18n.CHINESE) == (
        "Compactions: 3"
    )

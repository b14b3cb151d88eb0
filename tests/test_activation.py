"""Activation is one rule for every platform: mention, always, or a whole-word keyword."""

from __future__ import annotations

from compactbot.bot.ingress.activation import activated


def test_always_activation_answers_every_message() -> None:
    assert activated("always", None, "anything", mentions_others=False)


def test_keyword_activation_matches_the_whole_word_in_any_case() -> None:
    assert activated("keyword", "Jarvis", "hey jarvis, status?", mentions_others=False)
    assert not activated("keyword", "Jarvis", "hey there", mentions_others=False)
    assert not activated("keyword", "jarvis", "jarvisfoo broke", mentions_others=False)


def test_mention_activation_ignores_keywords() -> None:
    assert not activated("mention", "jarvis", "hey jarvis", mentions_others=False)


def test_talk_to_someone_else_is_never_activated() -> None:
    assert not activated("always", None, "@bob look", mentions_others=True)
    assert not activated("keyword", "jarvis", "@bob jarvis", mentions_others=True)


def test_blank_keyword_never_fires() -> None:
    assert not activated("keyword", "  ", "anything", mentions_others=False)

"""split_message: limits, fence balance, no lost text, boundary preferences."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactbot.adapters.chunking import classify_lines, fences_balanced, split_message, utf16_len

FENCE_LINE_RE = re.compile(r"^ {0,3}`{3,}[^`\n]*$")


def non_whitespace_without_fences(chunks: list[str]) -> str:
    """Every non-whitespace character of the chunks in order, dropping fence marker lines."""
    kept = []
    for chunk in chunks:
        for line in classify_lines(chunk):
            if line.kind in ("prose", "code"):
                kept.append(chunk[line.start : line.end])
    return re.sub(r"\s+", "", "".join(kept))


def non_whitespace_of_source(text: str) -> str:
    return non_whitespace_without_fences([text])


WORDS = st.sampled_from(
    [
        "hello",
        "world.",
        "Done!",
        "why?",
        "😀",
        "👨‍👩‍👧",
        "🇩🇪",
        "漢字かな",
        "。",
        "naïve",
        "x" * 30,
        "a_b",
        "**bold**",
        "`code`",
        "[link](https://e.com/a b)",
        "<tag>",
        "&amp;",
    ]
)
SEPARATORS = st.sampled_from([" ", " ", " ", "\n", "\n\n", "\t"])


@st.composite
def prose(draw: st.DrawFn) -> str:
    words = draw(st.lists(WORDS, min_size=1, max_size=40))
    return "".join(w + draw(SEPARATORS) for w in words)


@st.composite
def code_block(draw: st.DrawFn) -> str:
    lang = draw(st.sampled_from(["", "python", "js", "c++"]))
    lines = draw(st.lists(st.text(min_size=0, max_size=60).map(_no_fence), max_size=15))
    closed = draw(st.booleans())
    return f"```{lang}\n" + "".join(line + "\n" for line in lines) + ("```\n" if closed else "")


def _no_fence(s: str) -> str:
    return s.replace("`", "'").replace("\n", " ").replace("\r", " ")


@st.composite
def documents(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(prose(), code_block()), min_size=1, max_size=6))
    return "\n".join(parts)


@settings(max_examples=150, deadline=None)
@given(text=documents(), limit=st.integers(min_value=40, max_value=400))
def test_chunks_fit_balance_and_preserve_text_by_len(text: str, limit: int) -> None:
    assert_split_properties(text, limit, len)


@settings(max_examples=150, deadline=None)
@given(text=documents(), limit=st.integers(min_value=40, max_value=400))
def test_chunks_fit_balance_and_preserve_text_by_utf16(text: str, limit: int) -> None:
    assert_split_properties(text, limit, utf16_len)


def assert_split_properties(text: str, limit: int, measure: Callable[[str], int]) -> None:
    chunks = split_message(text, limit, measure=measure)
    for chunk in chunks:
        assert measure(chunk) <= limit
        assert chunk.strip()
        assert fences_balanced(chunk), chunk
    assert non_whitespace_without_fences(chunks) == non_whitespace_of_source(text)


@given(st.text(max_size=300))
def test_arbitrary_text_is_split_within_limit_without_loss(text: str) -> None:
    chunks = split_message(text, 50, measure=utf16_len)
    assert all(utf16_len(c) <= 50 and c.strip() for c in chunks)
    assert re.sub(r"\s+", "", "".join(chunks)) == re.sub(r"\s+", "", text)


def test_short_text_is_one_chunk_unchanged() -> None:
    assert split_message("hello world", 100) == ["hello world"]


def test_empty_or_blank_text_gives_no_chunks() -> None:
    assert split_message("", 100) == []
    assert split_message(" \n\n\t", 100) == []


def test_paragraph_break_preferred_over_line_break() -> None:
    text = "a" * 40 + "\n\n" + "b" * 20 + "\n" + "c" * 20
    assert split_message(text, 70) == ["a" * 40, "b" * 20 + "\n" + "c" * 20]
    para = "first line\nsecond line is here\n\nthird paragraph"
    assert split_message(para, 40) == ["first line\nsecond line is here", "third paragraph"]


def test_sentence_break_preferred_over_word_break() -> None:
    text = "One two three four. Five six seven eight nine ten eleven"
    assert split_message(text, 30)[0] == "One two three four."


def test_word_break_when_no_sentence_fits() -> None:
    chunks = split_message("alpha beta gamma delta epsilon zeta eta theta", 20)
    assert all(not c.startswith(" ") and len(c) <= 20 for c in chunks)
    assert " ".join(chunks) == "alpha beta gamma delta epsilon zeta eta theta"


def test_hard_cut_for_a_single_long_word() -> None:
    assert split_message("x" * 45, 20) == ["x" * 20, "x" * 20, "x" * 5]


def test_fence_closed_and_reopened_with_language() -> None:
    code = "\n".join(f"print({i})" for i in range(20))
    chunks = split_message(f"Look:\n```python\n{code}\n```\nbye", 80)
    assert len(chunks) > 2
    for chunk in chunks:
        assert fences_balanced(chunk)
    assert all(c.startswith("```python\n") for c in chunks[1:])
    assert chunks[0].endswith("\n```")


def test_emoji_never_split_into_surrogates_or_graphemes() -> None:
    family = "👨‍👩‍👧"
    chunks = split_message(family * 10, 20, measure=utf16_len)
    assert "".join(chunks) == family * 10
    assert all(c.count("\u200d") == 2 * (len(c) // 5) for c in chunks)


def test_indentation_inside_code_survives_a_cut() -> None:
    code = "```py\n" + "".join(f"    line_{i} = {i}\n" for i in range(10)) + "```"
    chunks = split_message(code, 60)
    assert chunks[1].startswith("```py\n    line_")


def test_tiny_limit_is_rejected() -> None:
    with pytest.raises(ValueError, match="limit"):
        split_message("hello", 3)

"""Markdown → Telegram HTML: escaping, safe links, balanced tags, chunking under 4096 UTF-16."""

from __future__ import annotations

import time
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactbot.adapters.chunking import utf16_len
from compactbot.adapters.telegram_html import (
    html_to_plain,
    markdown_to_telegram_html,
    render_chunks,
)

# Tags Telegram's HTML parse mode understands (the subset we may emit).
TELEGRAM_TAGS = {"b", "i", "s", "u", "a", "code", "pre", "blockquote"}


class TagBalance(HTMLParser):
    """Tracks a stack of open tags; records any mismatch or unknown tag."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TELEGRAM_TAGS:
            self.errors.append(f"unknown <{tag}>")
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(f"unbalanced </{tag}>")


def assert_balanced(html_text: str) -> None:
    checker = TagBalance()
    checker.feed(html_text)
    checker.close()
    assert not checker.errors, (checker.errors, html_text)
    assert not checker.stack, (checker.stack, html_text)


NASTY_CORPUS = [
    "**unclosed bold and *unclosed italic",
    "snake_case_names and __dunder__ and _half",
    "`unterminated code and ``double`` ticks",
    "<script>alert('x')</script> & <b>fake</b>",
    "- item\n  - nested *x*\n    1. deep **y**\n* star bullet",
    '```html\n<div class="a">&amp;</div>\n```',
    '[click](javascript:alert(1)) [q](https://e.com/?a="b"&c=<d>)',
    "> quote with **bold\n> and `code <x>`",
    "~~strike *mixed~~ italic*",
    "**bold _italic** overlap_",
    "# Heading with `code`\n## Sub *it*",
    "```\nunclosed fence <x>",
    "2 * 3 * 4 = 24 and a*b*c",
    "[nested [brackets]](http://x) and ![img](http://y.png)",
    "1) first\n2) second\n\n---\n",
]


@pytest.mark.parametrize("md", NASTY_CORPUS)
def test_nasty_llm_output_renders_balanced_tags(md: str) -> None:
    assert_balanced(markdown_to_telegram_html(md))


def test_basic_formatting_maps_to_telegram_tags() -> None:
    html = markdown_to_telegram_html("**b** __b2__ *i* _i2_ ~~s~~ `c`")
    assert html == "<b>b</b> <b>b2</b> <i>i</i> <i>i2</i> <s>s</s> <code>c</code>"


def test_script_tag_is_escaped() -> None:
    html = markdown_to_telegram_html("<script>alert(1)</script>")
    assert html == "&lt;script&gt;alert(1)&lt;/script&gt;"


def test_unbalanced_markers_stay_literal() -> None:
    assert markdown_to_telegram_html("**bold _it `x") == "**bold _it `x"


def test_snake_case_is_not_italic() -> None:
    assert markdown_to_telegram_html("call my_var_name now") == "call my_var_name now"


def test_fenced_code_gets_language_class_and_escaping() -> None:
    html = markdown_to_telegram_html("```python\nif a < b & c > d:\n    pass\n```")
    assert html == (
        '<pre><code class="language-python">if a &lt; b &amp; c &gt; d:\n    pass</code></pre>'
    )


def test_code_block_without_language_is_plain_pre() -> None:
    assert markdown_to_telegram_html("```\nx\n```") == "<pre>x</pre>"


def test_formatting_inside_code_is_not_rendered() -> None:
    assert markdown_to_telegram_html("`**x**`") == "<code>**x**</code>"


def test_http_link_becomes_anchor_with_escaped_quotes() -> None:
    html = markdown_to_telegram_html('[x](https://e.com/?q="a"&b=1)')
    assert html == '<a href="https://e.com/?q=&quot;a&quot;&amp;b=1">x</a>'


@pytest.mark.parametrize("url", ["javascript:alert(1)", "data:text/html,x", "file:///etc/passwd"])
def test_unsafe_link_scheme_renders_label_only(url: str) -> None:
    assert markdown_to_telegram_html(f"[label]({url})") == "label"


def test_tg_and_mailto_links_allowed() -> None:
    assert 'href="tg://user?id=1"' in markdown_to_telegram_html("[u](tg://user?id=1)")
    assert 'href="mailto:a@b.c"' in markdown_to_telegram_html("[m](mailto:a@b.c)")


def test_headings_become_bold_lines() -> None:
    assert markdown_to_telegram_html("## Plan") == "<b>Plan</b>"


def test_lists_become_bullets_and_numbers() -> None:
    html = markdown_to_telegram_html("- a\n  - b\n1. c\n2) d")
    assert html == "• a\n  • b\n1. c\n2. d"


def test_quote_lines_join_into_one_blockquote() -> None:
    html = markdown_to_telegram_html("> one\n> **two**\nafter")
    assert html == "<blockquote>one\n<b>two</b></blockquote>\nafter"


def test_html_to_plain_strips_tags_and_unescapes() -> None:
    html = markdown_to_telegram_html("**a** <b> & `x<y`")
    assert html_to_plain(html) == "a <b> & x<y"


def test_long_reply_with_code_splits_under_telegram_limit() -> None:
    prose = "This is a sentence about <things> & stuff. " * 120
    code = "\n".join(f"    value_{i} = compute({i}) < limit & mask  # >" for i in range(150))
    md = f"{prose}\n\n```python\n{code}\n```\n\n{prose}"
    assert len(md) > 10_000
    chunks = render_chunks(md)
    assert len(chunks) >= 3
    for chunk in chunks:
        assert utf16_len(chunk) <= 4096
        assert_balanced(chunk)
    code_chunks = [c for c in chunks if "value_" in c]
    assert all('<pre><code class="language-python">' in c for c in code_chunks)
    assert sum(c.count("value_") for c in chunks) == 150


def test_render_chunks_counts_emoji_in_utf16_units() -> None:
    chunks = render_chunks("😀 " * 3000, limit=4096)
    assert len(chunks) >= 2
    assert all(utf16_len(c) <= 4096 for c in chunks)


def test_render_chunks_counts_escaping_growth() -> None:
    chunks = render_chunks("& < > " * 1500, limit=1000)
    assert all(utf16_len(c) <= 1000 for c in chunks)
    assert "".join(html_to_plain(c) for c in chunks).count("&") == 1500


@pytest.mark.parametrize("md", ["*a " * 7000, "**x " * 5000, "_a_b " * 5000, "~~a " * 5000])
def test_unmatched_delimiters_render_in_linear_time(md: str) -> None:
    # A backtracking regex made each of these take ~20 s; linear rendering takes ~0.1 s.
    started = time.perf_counter()
    chunks = render_chunks(md)
    assert time.perf_counter() - started < 5
    assert all(utf16_len(c) <= 4096 for c in chunks)


MD_ALPHABET = st.sampled_from(
    [*"ab *_`~[]()<>&#>-\n", "**", "__", "~~", "```", "```py\n", "](http://x)", "😀", "\n> "]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(MD_ALPHABET, max_size=60).map("".join))
def test_rendered_tags_always_balanced(md: str) -> None:
    assert_balanced(markdown_to_telegram_html(md))


@settings(max_examples=60, deadline=None)
@given(st.lists(MD_ALPHABET, max_size=400).map("".join), st.integers(100, 600))
def test_render_chunks_always_fit_and_balance(md: str, limit: int) -> None:
    for chunk in render_chunks(md, limit):
        assert utf16_len(chunk) <= limit
        assert_balanced(chunk)

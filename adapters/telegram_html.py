"""Render the model's Markdown as the HTML subset Telegram accepts, and back to plain text."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser

from compactbot.adapters.chunking import Line, classify_lines, split_message, utf16_len

TELEGRAM_MAX_UTF16 = 4096  # Bot API limit for one message, counted in UTF-16 code units
# Link schemes Telegram opens safely; javascript:, data: and friends are rendered as plain text.
ALLOWED_LINK_SCHEMES = ("http://", "https://", "tg://", "mailto:")
BULLET = "• "
HORIZONTAL_RULE = "——————"

_HEADING_RE = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_BULLET_RE = re.compile(r"^([ \t]*)[-*+][ \t]+(.*)$")
_NUMBERED_RE = re.compile(r"^([ \t]*)(\d{1,9})[.)][ \t]+(.*)$")
_QUOTE_RE = re.compile(r"^ {0,3}>[ \t]?(.*)$")
_RULE_RE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")

# Inline patterns, tried at every position; on a tie the earlier pattern wins. Emphasis needs
# non-space just inside its delimiters, so "2 * 3 * 4" and a stray "**" stay literal. A span may
# not contain its own delimiter, so a failed match stops at the next one: linear, not quadratic,
# on LLM output full of unmatched "*".
_INLINE_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    # A backslash before ASCII punctuation makes it literal (CommonMark); display names rely on it.
    ("escape", re.compile(r"\\([!-/:-@\[-`{-~])")),
    ("code", re.compile(r"(`+)(.+?)(?<!`)\1(?!`)")),
    ("link", re.compile(r"\[([^\[\]\n]+)\]\(\s*([^\s()]+(?:\([^\s()]*\)[^\s()]*)*)\s*\)")),
    ("autolink", re.compile(r"<((?:https?|tg|mailto):[^<>\s]+)>")),
    ("b", re.compile(r"\*\*(?=[^\s*])((?:[^*]|\*(?!\*))*?[^\s*])\*\*")),
    ("b", re.compile(r"(?<!\w)__(?=[^\s_])((?:[^_]|_(?!_))*?[^\s_])__(?!\w)")),
    ("s", re.compile(r"~~(?=[^\s~])((?:[^~]|~(?!~))*?[^\s~])~~")),
    ("i", re.compile(r"\*(?=[^\s*])([^*]*?[^\s*])\*")),
    ("i", re.compile(r"(?<!\w)_(?=[^\s_])([^_]*?[^\s_])_(?!\w)")),
)


def escape(text: str) -> str:
    """Escape the three characters Telegram's HTML parser treats specially."""
    return html.escape(text, quote=False)


def markdown_to_telegram_html(md: str) -> str:
    """Convert Markdown to Telegram HTML; anything unrecognised comes out escaped and literal."""
    out: list[str] = []
    quote: list[str] = []
    code: list[str] = []
    lines = classify_lines(md)
    for index, line in enumerate(lines):
        raw = md[line.start : line.end].rstrip("\r\n")
        if line.kind != "prose" or not _QUOTE_RE.match(raw):
            _flush_quote(quote, out)
        if line.kind == "open":
            code = []
        elif line.kind == "code":
            code.append(raw)
        elif line.kind == "close":
            out.append(_code_block(line, code))
        elif m := _QUOTE_RE.match(raw):
            quote.append(_render_line(m.group(1)))
        else:
            out.append(_render_line(raw))
        if index == len(lines) - 1 and line.kind in ("open", "code"):
            out.append(_code_block(line, code))  # an unclosed fence runs to the end of the reply
    _flush_quote(quote, out)
    return "\n".join(out)


def render_chunks(md: str, limit: int = TELEGRAM_MAX_UTF16) -> list[str]:
    """Split Markdown so each chunk's rendered HTML fits `limit` UTF-16 units, then render."""
    chunks = split_message(md, limit, measure=_rendered_utf16_len)
    rendered = [markdown_to_telegram_html(chunk) for chunk in chunks]
    return [chunk for chunk in rendered if chunk.strip()]


def html_to_plain(text: str) -> str:
    """Strip tags and unescape entities: the plain-text resend when Telegram rejects a chunk."""
    parser = _TextExtractor()
    parser.feed(text)
    parser.close()
    return "".join(parser.parts)


def _rendered_utf16_len(md: str) -> int:
    return utf16_len(markdown_to_telegram_html(md))


def _flush_quote(quote: list[str], out: list[str]) -> None:
    if quote:
        out.append("<blockquote>" + "\n".join(quote) + "</blockquote>")
        quote.clear()


def _code_block(line: Line, code: list[str]) -> str:
    body = escape("\n".join(code))
    lang = line.fence.lang if line.fence else ""
    if lang:
        return f'<pre><code class="language-{escape(lang)}">{body}</code></pre>'
    return f"<pre>{body}</pre>"


def _render_line(raw: str) -> str:
    if m := _HEADING_RE.match(raw):
        return f"<b>{render_inline(m.group(1))}</b>"
    if _RULE_RE.match(raw):
        return HORIZONTAL_RULE
    if m := _BULLET_RE.match(raw):
        return _indent(m.group(1)) + BULLET + render_inline(m.group(2))
    if m := _NUMBERED_RE.match(raw):
        return f"{_indent(m.group(1))}{m.group(2)}. {render_inline(m.group(3))}"
    return render_inline(raw)


def _indent(whitespace: str) -> str:
    # Nested list items keep their depth; a tab counts as one level of four spaces.
    return whitespace.replace("\t", "    ")


def render_inline(text: str) -> str:
    """Render inline Markdown (code, links, emphasis); every tag is emitted with its closing tag."""
    out: list[str] = []
    pos = 0
    next_match: dict[int, re.Match[str] | None] = {}
    while pos < len(text):
        best: tuple[int, int, re.Match[str]] | None = None
        for index, (_, pattern) in enumerate(_INLINE_PATTERNS):
            match = next_match.get(index)
            if index not in next_match or (match is not None and match.start() < pos):
                match = pattern.search(text, pos)
                next_match[index] = match
            if match is not None and (best is None or match.start() < best[0]):
                best = (match.start(), index, match)
        if best is None:
            break
        start, index, match = best
        out.append(escape(text[pos:start]))
        out.append(_render_match(_INLINE_PATTERNS[index][0], match))
        pos = match.end()
    out.append(escape(text[pos:]))
    return "".join(out)


def _render_match(kind: str, match: re.Match[str]) -> str:
    if kind == "escape":
        return escape(match.group(1))
    if kind == "code":
        return f"<code>{escape(match.group(2).strip() or match.group(2))}</code>"
    if kind == "link":
        return _link(match.group(2), render_inline(match.group(1)))
    if kind == "autolink":
        return _link(match.group(1), escape(match.group(1)))
    return f"<{kind}>{render_inline(match.group(1))}</{kind}>"


def _link(url: str, label_html: str) -> str:
    url = url.strip("<>")
    if not url.lower().startswith(ALLOWED_LINK_SCHEMES):
        return label_html
    return f'<a href="{html.escape(url, quote=True)}">{label_html}</a>'


class _TextExtractor(HTMLParser):
    """Collects text content; `convert_charrefs` turns &amp; and friends back into characters."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)

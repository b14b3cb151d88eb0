"""Split long replies into platform-sized chunks without breaking fenced code blocks."""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

# A boundary of a weaker kind is used only if the best one of a stronger kind would leave the chunk
# less than this full: a paragraph break 10 characters in should not waste a 4096-unit message.
MIN_FILL_RATIO = 0.5
# How many candidate cuts of one kind to try before falling back to the next kind; each try costs
# one `measure` call, which may render the whole chunk.
MAX_TRIES_PER_KIND = 8
# Smallest limit that can still hold a reopened fence, a little code and the closing fence.
MIN_LIMIT = 16
# A hard cut steps back at most this many characters to avoid splitting a grapheme or fence line.
MAX_HARD_CUT_BACKOFF = 64

# CommonMark fence: up to three spaces of indent, then three or more backticks and an info string.
_FENCE_RE = re.compile(r"^ {0,3}(`{3,})([^`\n]*)$")
_SENTENCE_END_RE = re.compile(r"[.!?…](?=[\s\"')\]]|$)[\"')\]]*\s*|[。！？]\s*")
_WHITESPACE_RUN_RE = re.compile(r"\s+")
# Inline spans a word-level cut would break into literal markup: `code` and [text](url).
_PROTECTED_SPAN_RE = re.compile(r"`[^`\n]+`|\[[^\]\n]*\]\([^)\n]*\)")
_LINE_RE = re.compile(r"[^\n]*\n|[^\n]+$")
_LANG_RE = re.compile(r"[\w+#.-]+")

LineKind = Literal["prose", "open", "code", "close"]


@dataclass(frozen=True, slots=True)
class Fence:
    """An opening fence: its backtick run and language tag."""

    marker: str
    lang: str

    @property
    def opening(self) -> str:
        return self.marker + self.lang


@dataclass(frozen=True, slots=True)
class Line:
    """One line of text, end exclusive and including its newline, with its role in fences."""

    start: int
    end: int
    kind: LineKind
    fence: Fence | None


def utf16_len(s: str) -> int:
    """Length in UTF-16 code units, the unit Telegram counts its limits in."""
    return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)


def classify_lines(text: str) -> list[Line]:
    """Label every line as prose, a fence opening, code inside a fence, or a fence closing."""
    lines: list[Line] = []
    fence: Fence | None = None
    pos = 0
    # Only "\n" ends a line in Markdown; str.splitlines would also split on \x1c, \u2028, ...
    for raw in _LINE_RE.findall(text):
        body = raw.rstrip("\r\n")
        match = _FENCE_RE.match(body)
        kind: LineKind
        if fence is None:
            if match:
                lang_match = _LANG_RE.search(match.group(2))
                fence = Fence(match.group(1), lang_match.group(0) if lang_match else "")
                kind = "open"
            else:
                kind = "prose"
            lines.append(Line(pos, pos + len(raw), kind, fence))
        else:
            closes = (
                match is not None
                and not match.group(2).strip()
                and len(match.group(1)) >= len(fence.marker)
            )
            lines.append(Line(pos, pos + len(raw), "close" if closes else "code", fence))
            if closes:
                fence = None
        pos += len(raw)
    return lines


def fences_balanced(text: str) -> bool:
    """True when every fence opened in `text` is closed again."""
    lines = classify_lines(text)
    return not lines or lines[-1].kind in ("prose", "close")


def split_message(text: str, limit: int, *, measure: Callable[[str], int] = len) -> list[str]:
    """Split `text` into chunks with `measure(chunk) <= limit`, cutting at the gentlest boundary.

    A cut inside a fenced code block closes the fence and reopens it with the same language.
    """
    if limit < MIN_LIMIT:
        raise ValueError(f"limit {limit} is below the minimum of {MIN_LIMIT}")
    return _Splitter(text, limit, measure).run()


class _Splitter:
    """The state of one `split_message` call: the text's lines and its candidate cut positions."""

    def __init__(self, text: str, limit: int, measure: Callable[[str], int]) -> None:
        self.text = text
        self.limit = limit
        self.measure = measure
        self.lines = classify_lines(text)
        self.line_starts = [line.start for line in self.lines]
        self.candidates = _candidate_cuts(text, self.lines)

    def run(self) -> list[str]:
        chunks: list[str] = []
        start = self._skip_space(0)
        while start < len(self.text):
            end, chunk = self._next_chunk(start)
            if chunk.strip():
                chunks.append(chunk)
            start = self._skip_space(end)
        return chunks

    def _line_at(self, pos: int) -> Line:
        return self.lines[bisect.bisect_right(self.line_starts, pos) - 1]

    def _open_fence_at(self, pos: int) -> Fence | None:
        """The fence still open after `text[:pos]`, if any."""
        if pos >= len(self.text):
            last = self.lines[-1]
            return last.fence if last.kind in ("open", "code") else None
        line = self._line_at(pos)
        if line.kind == "code" or (line.kind == "close" and pos == line.start):
            return line.fence
        return None

    def _skip_space(self, pos: int) -> int:
        # Indentation inside a code block is content; only prose may lose leading whitespace.
        if pos < len(self.text) and self._open_fence_at(pos) is not None:
            return pos
        match = _WHITESPACE_RUN_RE.match(self.text, pos)
        return match.end() if match else pos

    def _build(self, start: int, end: int) -> str:
        reopen = self._open_fence_at(start) if start > 0 else None
        body = self.text[start:end]
        if reopen is not None:
            body = reopen.opening + "\n" + body
        closing = self._open_fence_at(end)
        if closing is None:
            return body.rstrip()
        return body.rstrip("\r\n") + "\n" + closing.marker

    def _fits(self, start: int, end: int) -> bool:
        return self.measure(self._build(start, end)) <= self.limit

    def _next_chunk(self, start: int) -> tuple[int, str]:
        """The end of the chunk starting at `start`, and the chunk's text."""
        total = len(self.text)
        if self._fits(start, total):
            return total, self._build(start, total)
        reach = _bisect_max(start, total, lambda end: self._fits(start, end))
        floor = start + max(1, int((reach - start) * MIN_FILL_RATIO))
        for positions in self.candidates:
            lo = bisect.bisect_left(positions, floor)
            hi = bisect.bisect_right(positions, reach)
            for pos in reversed(positions[max(lo, hi - MAX_TRIES_PER_KIND) : hi]):
                if self._fits(start, pos):
                    return pos, self._build(start, pos)
        for pos in range(reach, max(start, reach - MAX_HARD_CUT_BACKOFF), -1):
            if self._cuttable(pos) and self._fits(start, pos):
                return pos, self._build(start, pos)
        # Not even one character fits inside the fence wrapper (a giant marker or language tag):
        # cut the raw text rather than break the limit.
        end = _bisect_max(start, total, lambda e: self.measure(self.text[start:e]) <= self.limit)
        if end == start:
            raise ValueError(f"a single character does not fit in limit {self.limit}")
        return end, self.text[start:end]

    def _cuttable(self, pos: int) -> bool:
        line = self._line_at(pos)
        if line.kind in ("open", "close") and line.start < pos < line.end:
            return False
        return not _joins_previous(self.text, pos)


def _bisect_max(lo: int, hi: int, fits: Callable[[int], bool]) -> int:
    """Largest end in (lo, hi) that fits, or lo; exact when `fits` is monotone."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _joins_previous(text: str, pos: int) -> bool:
    """True when cutting before `text[pos]` would split a grapheme (ZWJ emoji, accents, flags)."""
    if pos <= 0 or pos >= len(text):
        return False
    ch, prev = text[pos], text[pos - 1]
    if prev == "\u200d" or ch in ("\u200d", "\ufe0f", "\ufe0e") or unicodedata.combining(ch):
        return True
    # Emoji skin-tone modifiers and regional-indicator pairs (flags) belong to the previous char.
    if 0x1F3FB <= ord(ch) <= 0x1F3FF:
        return True
    return _is_regional(ch) and _is_regional(prev)


def _is_regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def _candidate_cuts(text: str, lines: Sequence[Line]) -> list[list[int]]:
    """Cut positions by preference: paragraph, line, sentence, word (each sorted ascending)."""
    paragraph: list[int] = []
    line_cuts: list[int] = []
    sentence: list[int] = []
    word: list[int] = []
    protected = [(m.start(), m.end()) for m in _PROTECTED_SPAN_RE.finditer(text)]
    previous: Line | None = None
    for line in lines:
        # A cut right after an opening fence or right before a closing one yields an empty block.
        if (
            line.start > 0
            and line.kind != "close"
            and (previous is None or previous.kind != "open")
        ):
            line_cuts.append(line.start)
            after_blank = previous is not None and not text[previous.start : previous.end].strip()
            after_block = previous is not None and previous.kind == "close"
            if after_blank or after_block or line.kind == "open":
                paragraph.append(line.start)
        if line.kind in ("prose", "code"):
            content = text[line.start : line.end].rstrip("\r\n")
            for m in _SENTENCE_END_RE.finditer(content):
                sentence.append(line.start + m.end())
            for m in _WHITESPACE_RUN_RE.finditer(content):
                word.append(line.start + m.end())
        previous = line
    inline = [_outside(sorted(set(kind)), protected) for kind in (sentence, word)]
    return [paragraph, line_cuts, *inline]


def _outside(positions: list[int], spans: Sequence[tuple[int, int]]) -> list[int]:
    if not spans:
        return positions
    starts = [s for s, _ in spans]
    kept = []
    for pos in positions:
        i = bisect.bisect_left(starts, pos) - 1
        if i < 0 or not spans[i][0] < pos < spans[i][1]:
            kept.append(pos)
    return kept

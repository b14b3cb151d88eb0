"""What a query is searched by: its distinct words, less the common ones, each by its stem
("rules" finds "rule" and "rules"; the store's search matches substrings)."""

from __future__ import annotations

import re

MIN_TERM_CHARS = 2
MIN_STEM_CHARS = 3
_WORD = re.compile(r"\w+")
# Longest first; "es" only where English adds it ("classes", "boxes"), else "rules" is "rul".
_SUFFIXES = (
    *(("ies", "y"), ("ing", ""), ("ed", "")),
    *((f"{end}es", end) for end in ("ss", "x", "z", "ch", "sh")),
    ("s", ""),
)
# Question scaffolding and chat filler: words nearly every message holds, which as search
# terms rank chatter level with the answer.
_COMMON_TEXT = """
    a about above after again against all also am an and any anyone anything are as ask asked at
    be been before being below between both but by can could did do does doing done down during
    each else ever every few for from further get got had has have having he her here hers herself
    him himself his how i if in into is it its itself just know let lets me mention mentioned more
    most my myself no nor not now of off on once only or other our ours ourselves out over own
    please recall remember said same say saying says she should so some someone something still
    such talk talked tell than thank thanks that the their theirs them themselves then there these
    they think this those through to told too under until up very was we were what when where
    which while who whom why will with would you your yours yourself yourselves
    hi hey hello yo ok okay good morning evening night bot
"""
COMMON_WORDS = frozenset(_COMMON_TEXT.split())


def search_terms(query: str) -> list[str]:
    """Distinct words of at least two characters; non-ASCII words (CJK runs) are kept as-is."""
    terms: list[str] = []
    for word in _WORD.findall(query):
        if len(word) < MIN_TERM_CHARS and word.isascii():
            continue
        if word.lower() not in (t.lower() for t in terms):
            terms.append(word)
    return terms


def query_stems(query: str) -> list[str]:
    """The stems of the query's words that are not common ones (all of them when every word
    is common: "who is he?" still searches)."""
    terms = search_terms(query)
    telling = [t for t in terms if t.lower() not in COMMON_WORDS] or terms
    return list(dict.fromkeys(stem(t) for t in telling))


def stem(word: str) -> str:
    """A light English stem: "rules" → "rule", "deploying" → "deploy", "parties" → "party"."""
    lowered = word.lower()
    if not lowered.isascii():
        return lowered
    for suffix, replacement in _SUFFIXES:
        cut = len(lowered) - len(suffix)
        if lowered.endswith(suffix) and cut >= MIN_STEM_CHARS and not lowered.endswith("ss"):
            return lowered[:cut] + replacement
    return lowered

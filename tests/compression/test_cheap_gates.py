"""The cheap gates say what their expressions would: they only skip work, never change it."""

from __future__ import annotations

import re

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from compactbot.compression.features import has_features, message_features
from compactbot.compression.line_weight import may_weigh, text_weight
from compactbot.compression.salient import has_digit

TEXTS = st.text(alphabet=st.sampled_from("ab9 :.$\n٣€Monday"), max_size=40)


@given(TEXTS)
def test_has_digit_is_the_expression(text: str) -> None:
    assert has_digit(text) == (re.search(r"\d", text) is not None)


@pytest.mark.parametrize(
    "text",
    [
        "for the record, we keep it",  # a marker: 2 points, no third
        "for the record: from now on it is mandatory",
        "keep in mind, the standup moves to Monday",  # marker + weekday: 3
        "from now on we meet in this group",
    ],
)
def test_may_weigh_passes_every_line_that_weighs_three(text: str) -> None:
    if text_weight(text) >= 3:
        assert may_weigh(text, 3)


@given(st.lists(st.sampled_from(["for the record", "from now on", "monday", "ok", "day"])))
def test_may_weigh_never_hides_a_weight(words: list[str]) -> None:
    text = " ".join(words)
    for minimum in (2, 3):
        if text_weight(text) >= minimum:
            assert may_weigh(text, minimum)


def _scanned_may_weigh(text: str, minimum: int) -> bool:
    """may_weigh() spelled out one substring test per marker: what its automaton stands for."""
    from compactbot.compression.line_weight import (
        CURRENCIES,
        FILE_EXTENSION,
        KEEP_MARKERS,
        NORMATIVE,
    )

    if minimum <= 1 or ":" in text or "$" in text or has_digit(text):
        return True
    if "://" in text or ".example" in text or FILE_EXTENSION.search(text):
        return True
    if any(currency in text for currency in CURRENCIES):
        return True
    lowered = text.lower()
    if any(marker in lowered for marker in NORMATIVE):
        return True
    keep = any(marker in lowered for marker in KEEP_MARKERS)
    return keep and (minimum < 3 or "day" in lowered)


# Markers, their overlaps ("keep in minday": a weekday's "day" inside another marker), other
# cases and scripts (the Kelvin sign lowers to "k", "٣" is a digit), and a lone surrogate.
_PIECES = [
    *("for the record", "Keep In Mind", "keep in min", "ay", "from now on", "MANDATORY"),
    *("day", "Thurs", "codename", "\u212aeep in mind", "٣", "7", ":", "/", "$", "€", "."),
    *("example", "py", "a", " ", "\n", "don't forget", "remember this", "in this chat"),
    "\ud83d",  # a lone surrogate, as JSON can carry one
]


@given(st.lists(st.sampled_from(_PIECES), max_size=12), st.sampled_from([2, 3]))
@example(["keep in min", "day"], 3)
@example(["\u212aeep in mind"], 2)
@example(["\ud83d", "for the record", " Monday"], 3)
def test_may_weigh_passes_every_text_the_marker_scans_pass(pieces: list[str], minimum: int) -> None:
    text = "".join(pieces)
    if _scanned_may_weigh(text, minimum):
        assert may_weigh(text, minimum)


@given(
    st.lists(st.one_of(st.none(), st.integers(0, 127), st.integers(128, 600)), max_size=60),
    st.sampled_from([1, 8, 16, 24, 64]),
    st.booleans(),
)
def test_hinted_reads_the_bits_the_comprehension_reads(
    hints: list[int | None], mask: int, clear: bool
) -> None:
    from compactbot.compression.message_hints import hinted

    expected = [i for i, h in enumerate(hints) if h is None or bool(h & mask) != clear]
    assert hinted(hints, mask, clear=clear) == expected
    small = [h for h in hints if h is not None and h < 256]  # the bytes path on its own
    assert hinted(small, mask, clear=clear) == [
        i for i, h in enumerate(small) if bool(h & mask) != clear
    ]


async def test_a_lone_surrogate_passes_every_gate_of_a_compaction() -> None:
    from compactbot.compression import CompressorConfig, ContextCompressor
    from compactbot.compression.message_hints import message_hints
    from tests.compression.seeded_chats import seeded_chat

    chat = seeded_chat(1)
    chat[5:5] = [
        {"role": "user", "content": "[Ana] broken emoji \ud83d, remember this for the record"},
        {"role": "assistant", "content": "noted \udc4d on Thursday"},
    ]
    config = CompressorConfig(context_length=8_192, protect_first_n=2, protect_last_n=4)
    for passed in ({}, {"hints": [message_hints(m) for m in chat]}):
        result = await ContextCompressor(config, None).compress(chat, force=True, **passed)
        assert result.outcome == "compressed"


# Words and marks that reach each branch of message_features(): labels, every kind of signal,
# owners, values, links, questions, sentence breaks and a run long enough to be split.
_FEATURE_PIECES = [
    "Budget:", "FACT:", "Note:", "DECISION:", "we decided", "go with", "I prefer", "rather",
    "never", "must", "do not", "rule:", "from now on", "Bob will", "I'll", "@ann", "please",
    "Ann, please", "todo",
    "for the record", "remember this", "codename", "Monday", "day", "123", "7", "v1.2.3",
    "$5", "3 eur", "https://x.example/a", "notes.pdf", "ok", "lunch", "?", ".", "\n",
    "the deploy day is", "x" * 150,
]  # fmt: skip


@given(st.lists(st.sampled_from(_FEATURE_PIECES), max_size=10), st.booleans())
@example(["FACT:", "ok"], False)
@example(["ok", "?"], True)
@example(["notes.pdf"], False)
@example(["the deploy day is", "Monday"], False)
@example(["x" * 150, ".", "x" * 150, ".", "Bob will", "todo", "."], False)
def test_has_features_says_whether_message_features_finds_any(
    pieces: list[str], from_user: bool
) -> None:
    text = " ".join(pieces)
    found = message_features(text, from_user)
    assert has_features(text, from_user) == bool(found.candidates or found.links or found.questions)

"""What is known of a message before compress() reads it says what reading it would find:
a hint only skips work, never changes it."""

from __future__ import annotations

import datetime as dt
import re

from hypothesis import example, given
from hypothesis import strategies as st

from compactbot.compression.extract import BACKUP_MIN_WEIGHT, extract_update, read_features
from compactbot.compression.features import NO_FEATURES, message_features
from compactbot.compression.fold import BACKED_UP_KINDS
from compactbot.compression.line_weight import text_weight
from compactbot.compression.message_hints import (
    FEATURELESS,
    SHOWN_LIGHT,
    message_hints,
)
from compactbot.compression.salient import has_digit

TODAY = dt.date(2026, 12, 1)
TEXTS = st.text(alphabet=st.sampled_from("ab9 :.$\n٣€Monday"), max_size=40)


@given(TEXTS)
def test_has_digit_is_the_expression(text: str) -> None:
    assert has_digit(text) == (re.search(r"\d", text) is not None)


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
    "never", "must", "do not", "rule:", "Never share keys", "Bob will", "I'll", "@ann", "please",
    "can you book the venue", "I prefer short answers", "不要发密码", "ALICE-ASK:",
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
def test_the_hints_say_what_the_extractor_and_its_backup_find(
    pieces: list[str], from_user: bool
) -> None:
    text = " ".join(pieces)
    found = message_features(text, from_user)
    assert (found is NO_FEATURES) == (not (found.candidates or found.links or found.questions))
    message = {"role": "user" if from_user else "assistant", "content": f"[Ann] {text}"}
    hints = message_hints(message)
    assert bool(hints & FEATURELESS) == (read_features(message) is NO_FEATURES)
    backed = extract_update(
        [message], ["m1"], [None], today=TODAY, min_weight=BACKUP_MIN_WEIGHT, speakers=("Ann",)
    )
    weighty = [e for e in backed.additions if text_weight(e.text) >= BACKUP_MIN_WEIGHT]
    if hints & SHOWN_LIGHT:
        assert not [e for e in weighty if e.kind in BACKED_UP_KINDS]

"""The cheap gates say what their expressions would: they only skip work, never change it."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compression.features import may_weigh, text_weight
from compression.salient import has_digit

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

"""The retention bench's planted items: enough natural phrasings, and planted where it says."""

from __future__ import annotations

import random
import string

import pytest

from bench.phrasing import Values
from bench.planted_items import KINDS, PHRASINGS, phrasing_picks, plant
from bench.workloads import Workload

PEOPLE = ("Ann", "Bob", "Cyd")
SLOTS = {"name", "lname", "slug", "code", "number", "amount", "date", "date_zh", "owner"}


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_has_thirty_phrasings_mixing_labels_and_chinese(kind: str) -> None:
    options = PHRASINGS[kind]
    assert len(options) >= 30
    assert sum(p.chinese for p in options) >= 3
    assert 1 <= sum(p.labelled for p in options) <= len(options) // 2
    assert len({p.template for p in options}) == len(options)


@pytest.mark.parametrize("kind", KINDS)
def test_each_phrasing_holds_its_ask_terms_and_its_value(kind: str) -> None:
    values = Values(random.Random(kind))
    for phrasing in PHRASINGS[kind]:
        fields = {f for _, f, _, _ in string.Formatter().parse(phrasing.template) if f}
        assert fields <= SLOTS, phrasing.template
        text, value = values.fill(phrasing.template, phrasing.value, "Bogdan")
        assert value and value.lower() in text.lower(), phrasing.template
        for term in phrasing.ask:
            assert term == term.lower() and term in text.lower(), (term, phrasing.template)


def test_seven_rooms_plant_every_phrasing_and_two_rooms_reach_the_chinese_ones() -> None:
    for kind, options in PHRASINGS.items():
        used = {i for room in range(7) for i in phrasing_picks(5, room)[kind]}
        assert used == set(range(len(options))), kind
        two = {i for room in (2, 5) for i in phrasing_picks(5, room)[kind]}
        assert any(options[i].chinese for i in two), kind


def _room(messages: int = 400) -> Workload:
    out = [{"role": "system", "content": "system"}]
    turns = []
    for i in range(messages):
        if i % 10 == 9:
            out.append({"role": "user", "content": f"[Ann] @bot question {i}"})
            turns.append(len(out) - 1)
            out.append({"role": "assistant", "content": f"answer {i}"})
        else:
            out.append({"role": "user", "content": f"[{PEOPLE[i % 3]}] hi {i}"})
    times = tuple(float(i) for i in range(len(out)))
    return Workload("room", PEOPLE, tuple(out), times, tuple(turns))


def test_plant_puts_each_item_at_its_index_with_unique_values_and_keeps_turns() -> None:
    room = _room()
    planted_room, planted = plant(room, per_kind=5, room_number=0, span=(5, 380), seed=1)
    assert len(planted) == 30
    assert len(planted_room.messages) == len(room.messages) + 30
    for item in planted:
        content = planted_room.messages[item.index]["content"]
        assert content == f"[{item.speaker}] {item.text}"
        assert item.value.lower() in item.text.lower()
    values = [p.value.lower() for p in planted]
    assert len(set(values)) == len(values)
    assert not any(a != b and a in b for a in values for b in values)
    for before, after in zip(room.turns, planted_room.turns, strict=True):
        assert planted_room.messages[after] == room.messages[before]

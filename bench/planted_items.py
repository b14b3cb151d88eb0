"""Planted items (rules, decisions, exact values, preferences, action items, updates,
attribution) with values nobody can guess, and the slots in a room where each is planted.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

KINDS = ("rule", "decision", "fact", "preference", "action", "update", "attribution")
_THINGS = ("bus", "hotel", "venue", "ferry", "hall", "van", "stage", "boat", "cabin", "studio")
_FOODS = ("tea", "noodles", "curry", "salad", "dumplings", "tacos", "soup", "pastries")
_SUBJECTS = ("catering", "photographer", "printer", "caterer", "sound crew", "florist", "DJ")
_SYLLABLES = ("vel", "ka", "ro", "brel", "vox", "min", "dra", "ze", "tul", "qua", "nor", "fey")
_CODE_LETTERS = "ABCDEFGHJKMNPQRTUVWXYZ"


@dataclass(frozen=True, slots=True)
class Planted:
    """One planted item: its message, the value to find, and what must sit on the same line."""

    id: str
    kind: str
    index: int  # position in `Workload.messages` of the message that completes the item
    speaker: str
    text: str  # the planted message text, without the "[Name] " attribution
    value: str  # exact, unguessable
    together: tuple[str, ...]  # case-insensitive words that must share the value's line
    needs_speaker: bool  # who-said-what: the speaker's name must share the line too
    stale_value: str | None = None  # an update's v1
    stale_index: int | None = None
    pinned: bool = False


@dataclass(slots=True)
class PlannedItem:
    """A planted message waiting for its slot in the human stream."""

    kind: str
    slot: int
    text: str
    value: str
    together: tuple[str, ...]
    needs_speaker: bool
    owner: str | None = None
    v1: PlannedItem | None = None
    pinned: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class _Values:
    """Random values, each used once per workload."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()
        self.subjects: set[tuple[str, str]] = set()

    def distinct(self, template: str, options: Sequence[str], k: int = 1) -> list[str]:
        """`k` options not used with `template` yet in this room: two facts about the same
        subject would be an update, not two facts (memory supersedes the older one)."""
        free = [o for o in options if (template, o) not in self.subjects] or list(options)
        chosen = self.rng.sample(free, min(k, len(free)))
        self.subjects.update((template, o) for o in chosen)
        return chosen

    def _fresh(self, make: Any) -> str:
        while True:
            value = make()
            if value not in self.used and not any(value in u or u in value for u in self.used):
                self.used.add(value)
                return value

    def code(self, prefix: str | None = None) -> str:
        rng = self.rng
        head = prefix or "".join(rng.choices(_CODE_LETTERS, k=3))
        return self._fresh(
            lambda: f"{head}-{rng.randint(1000, 9999)}-{''.join(rng.choices(_CODE_LETTERS, k=2))}"
        )

    def amount(self) -> str:
        return self._fresh(lambda: f"${self.rng.randint(1_200, 98_000):,}")

    def date(self) -> str:
        rng = self.rng
        return self._fresh(lambda: f"2026-{rng.randint(10, 12):02d}-{rng.randint(1, 28):02d}")

    def word(self) -> str:
        rng = self.rng
        return self._fresh(lambda: "".join(rng.choices(_SYLLABLES, k=3)) + str(rng.randint(2, 9)))

    def number(self) -> str:
        return self._fresh(lambda: str(self.rng.randint(1_000, 99_999)))

    def near(self, value: str) -> str:
        """A confusable twin: the same value with its last digit group changed."""
        digits = [i for i, ch in enumerate(value) if ch.isdigit()]
        for _ in range(50):
            chars = list(value)
            position = digits[-1] if digits else len(chars) - 1
            chars[position] = self.rng.choice(string.digits)
            twin = "".join(chars)
            if twin not in self.used:
                self.used.add(twin)
                return twin
        return self.code()


# Labels that start every planted line of a labelled room: they are not subjects (SPEC 6.6).
LABELS = {"rule": "RULE:", "fact": "FACT:", "update": "FACT:", "update_v1": "FACT:"}
OTHER_LABEL = "Note:"


def plan_items(
    rng: random.Random, people: Sequence[str], per_kind: int, slots: int, early_share: float
) -> list[PlannedItem]:
    """What to plant and where: mostly early (compacted many times), some late, one in the head."""
    values = _Values(rng)
    plans: list[PlannedItem] = []
    early = (max(4, int(slots * 0.01)), int(slots * early_share))
    late = (int(slots * 0.40), int(slots * 0.85))

    def slot(i: int) -> int:
        low, high = late if i == per_kind - 1 else early
        return rng.randint(low, max(low, high))

    for i in range(per_kind):
        plans.append(_rule(values, slot(i)))
        plans.append(_decision(values, slot(i), rng))
        plans += _fact_pair(values, slot(i), rng)
        plans.append(_preference(values, slot(i), rng))
        plans.append(_action(values, slot(i), rng, people))
        plans += _update(values, slot(i), rng, slots)
        plans.append(_attribution(values, slot(i), rng))
    # The chat's standing rule sits in the head and is pinned too (SPEC 6.8).
    link = values.word() + ".example"
    plans.append(
        PlannedItem(
            "rule",
            1,
            f"No links to {link} in this group, ever.",
            link,
            ("no links",),
            False,
            pinned=True,
        )
    )
    return plans


def _rule(values: _Values, slot: int) -> PlannedItem:
    rng = values.rng
    choice = rng.randrange(4)
    if choice == 0:
        v = values.word() + ".example"
        return PlannedItem("rule", slot, f"Rule for this group: no links to {v}, please.", v,
                           ("no links",), False)  # fmt: skip
    if choice == 1:
        v = values.code("EXP")
        return PlannedItem("rule", slot,
                           f"Chat rule: every expense message must carry the tag {v}.", v,
                           ("expense",), False)  # fmt: skip
    if choice == 2:
        v = values.code("RM")
        return PlannedItem("rule", slot, f"House rule: never book room {v} on Fridays.", v,
                           ("fridays",), False)  # fmt: skip
    v = values.word() + "-desk"
    return PlannedItem("rule", slot,
                       f"From now on invoices only go to the {v} mailbox, nowhere else.", v,
                       ("invoices",), False)  # fmt: skip


def _decision(values: _Values, slot: int, rng: random.Random) -> PlannedItem:
    [subject] = values.distinct("decision", _SUBJECTS)
    if rng.random() < 0.5:
        vendor = values.word().capitalize()
        reason = values.amount()
        text = f"We decided to go with {vendor} for the {subject} because their quote was {reason}."
        return PlannedItem("decision", slot, text, vendor, (subject, reason), False)
    date = values.date()
    reason = values.word().capitalize()
    text = (
        f"Final decision: the {subject} slot moves to {date} since {reason} can only do that day."
    )
    return PlannedItem("decision", slot, text, date, (subject, reason), False)


def _fact_pair(values: _Values, slot: int, rng: random.Random) -> list[PlannedItem]:
    """Two facts with confusable values about different things (hard-needle style)."""
    kind = rng.randrange(3)
    first, second = values.distinct(f"fact{kind}", _THINGS, 2)
    if kind == 0:
        a = values.code()
        b = values.near(a)
        template = "The booking reference for the {thing} is {value}."
    elif kind == 1:
        a = values.amount()
        b = values.near(a)
        template = "The budget for the {thing} is {value}."
    else:
        a = values.code("INV")
        b = values.near(a)
        template = "The {thing} invoice number is {value}."
    gap = rng.randint(3, 40)
    return [
        PlannedItem("fact", slot, template.format(thing=first, value=a), a, (first,), False),
        PlannedItem(
            "fact", slot + gap, template.format(thing=second, value=b), b, (second,), False
        ),
    ]


def _preference(values: _Values, slot: int, rng: random.Random) -> PlannedItem:
    food = f"{values.word()} {rng.choice(_FOODS)}"
    if rng.random() < 0.5:
        text = f"I prefer {food} for the team dinner, if anyone asks."
        return PlannedItem("preference", slot, text, food, ("dinner",), True)
    seat = values.code("SEAT")
    text = f"For the offsite I'd rather have seat {seat}, near the window."
    return PlannedItem("preference", slot, text, seat, ("offsite",), True)


def _action(values: _Values, slot: int, rng: random.Random, people: Sequence[str]) -> PlannedItem:
    owner = rng.choice(list(people))
    date = values.date()
    choice = rng.randrange(3)
    if choice == 0:
        code = values.code("CTR")
        text = f"Action item: @{owner} sends the signed contract {code} to the venue by {date}."
    elif choice == 1:
        code = values.code("BK")
        thing = rng.choice(_THINGS)
        text = f"@{owner} will book the {thing} under reference {code} before {date}."
    else:
        code = values.word() + ".example"
        text = f"{owner}, please renew the domain {code} by {date}, it is on you."
    return PlannedItem("action", slot, text, code, (owner, date), False, owner=owner)


def _update(values: _Values, slot: int, rng: random.Random, slots: int) -> list[PlannedItem]:
    choice = rng.randrange(3)
    [thing] = values.distinct(f"update{choice}", _THINGS)
    if choice == 0:
        v1, v2 = values.code("DOOR"), values.code("DOOR")
        first = f"The door code for the {thing} is {v1}."
        second = f"Update: the door code for the {thing} changed to {v2}."
        subject = "door code"
    elif choice == 1:
        v1, v2 = values.amount(), values.amount()
        first = f"The deposit for the {thing} is {v1}."
        second = f"Correction: the deposit for the {thing} is now {v2}."
        subject = "deposit"
    else:
        v1, v2 = values.date(), values.date()
        first = f"The launch date for the {thing} is {v1}."
        second = f"Heads up, the launch date for the {thing} moved to {v2}."
        subject = "launch date"
    old = PlannedItem("update_v1", slot, first, v1, (subject, thing), False)
    later = slot + rng.randint(int(slots * 0.05), int(slots * 0.20))
    return [old, PlannedItem("update", later, second, v2, (subject, thing), False, v1=old)]


def _attribution(values: _Values, slot: int, rng: random.Random) -> PlannedItem:
    choice = rng.randrange(3)
    if choice == 0:
        v = values.code("BUG")
        text = f"I was the one who found bug {v} last night, for the record."
    elif choice == 1:
        v = values.number()
        [thing] = values.distinct("raffle", _THINGS)
        text = f"My pick for the {thing} raffle is ticket {v}, remember I said it."
    else:
        v = values.word()
        text = f"I suggested the codename {v} for the new project."
    return PlannedItem("attribution", slot, text, v, (), True)

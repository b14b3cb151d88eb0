"""A planted item's phrasing: a sentence template whose slots are filled with values nobody can
guess, the value a probe looks for, and the words a member would search with.

Templates use `str.format` fields: {name} (a made-up proper noun), {lname} (the same kind of
word in lower case, for paths and URLs), {slug}, {code}, {number}, {amount}, {date}, {date_zh}
and {owner} (another member of the room). Each field is filled once per item, on first use.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_SYLLABLES = ("vel", "ka", "ro", "brel", "vox", "min", "dra", "ze", "tul", "qua", "nor", "fey",
              "lin", "so", "mar", "ith", "pel", "gor", "zan", "ub")  # fmt: skip
_CODE_LETTERS = "ABCDEFGHJKMNPQRTUVWXYZ"
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_CJK = re.compile(r"[\u3400-\u9fff]")
# "RULE:", "Heads up:", "TODO {owner}:", "fyi …", "快递单号：": a label of up to three words.
_LABEL = re.compile(r"^(?:(?:fyi|FYI)\b|[^\s:：]+(?:\s+[^\s:：]+){0,2}\s*[:：](?!//))")


@dataclass(frozen=True, slots=True)
class Phrasing:
    kind: str
    template: str
    value: str  # a template too: what the probe looks for, filled from the same slots
    ask: tuple[str, ...]  # words (lower case) a member would search the memory with

    @property
    def chinese(self) -> bool:
        return bool(_CJK.search(self.template))

    @property
    def labelled(self) -> bool:
        return bool(_LABEL.match(self.template))


def phrasings(kind: str, rows: Sequence[tuple[str, str, str]]) -> tuple[Phrasing, ...]:
    """(template, value template, "|"-separated ask terms) rows as phrasings of one kind."""
    return tuple(Phrasing(kind, text, value, tuple(ask.split("|"))) for text, value, ask in rows)


class Values:
    """Fresh values for one room: none is used twice, none contains another."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self._used: set[str] = set()

    def fill(self, template: str, value: str, owner: str) -> tuple[str, str]:
        """The template and its value template with every slot filled."""
        slots = _Slots(self, owner)
        return template.format_map(slots), value.format_map(slots)

    def fresh(self, make: Callable[[], str]) -> str:
        while True:
            value = make()
            low = value.lower()
            if not any(low in used or used in low for used in self._used):
                self._used.add(low)
                return value

    def word(self) -> str:
        return self.fresh(lambda: "".join(self.rng.choices(_SYLLABLES, k=3)).capitalize())

    def code(self) -> str:
        rng = self.rng
        return self.fresh(
            lambda: (
                "".join(rng.choices(_CODE_LETTERS, k=rng.choice((2, 3))))
                + f"-{rng.randint(1000, 9999)}"
            )
        )

    def number(self) -> str:
        return self.fresh(lambda: str(self.rng.randint(10_000, 99_999)))

    def amount(self) -> str:
        return self.fresh(lambda: f"{self.rng.randint(1_200, 98_000):,}")

    def date(self) -> str:
        rng = self.rng
        return self.fresh(lambda: f"{rng.choice(_MONTHS)} {rng.randint(1, 28)}")

    def date_zh(self) -> str:
        rng = self.rng
        return self.fresh(lambda: f"{rng.randint(1, 12)}月{rng.randint(1, 28)}日")

    def slug(self) -> str:
        word = self.word().lower()
        return f"{word}-{self.rng.randint(10, 99)}"


class _Slots(dict[str, str]):
    """Fills a field the first time a template names it."""

    def __init__(self, values: Values, owner: str) -> None:
        super().__init__(owner=owner)
        self._values = values

    def __missing__(self, key: str) -> str:
        makers: dict[str, Callable[[], str]] = {
            "name": self._values.word,
            "lname": lambda: self._values.word().lower(),
            "code": self._values.code,
            "number": self._values.number,
            "amount": self._values.amount,
            "date": self._values.date,
            "date_zh": self._values.date_zh,
            "slug": self._values.slug,
        }
        value = makers[key]()
        self[key] = value
        return value

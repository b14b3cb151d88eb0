"""Items planted into a room's chatter: which phrasing, where, who said it, and the value a
probe looks for. Six kinds, each phrased at least 30 ways (bench/phrasings_*.py).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace

from bench.phrasing import Phrasing, Values
from bench.phrasings_norms import PREFERENCES, RULES
from bench.phrasings_plans import ACTIONS, DECISIONS
from bench.phrasings_values import FACTS, LINKS
from bench.workloads import Workload

# In the order of importance the memory renders them (SPEC 6.11).
KINDS = ("rule", "preference", "action", "decision", "fact", "link")
PHRASINGS: dict[str, tuple[Phrasing, ...]] = {
    "rule": RULES,
    "preference": PREFERENCES,
    "action": ACTIONS,
    "decision": DECISIONS,
    "fact": FACTS,
    "link": LINKS,
}
PHRASING_STRIDE = 7
# Kinds whose line must name the member who said it (a preference is that member's).
SPEAKER_KINDS = frozenset({"preference"})


@dataclass(frozen=True, slots=True)
class Planted:
    """One planted message and what a probe looks for."""

    id: str
    kind: str
    phrasing: int  # index in PHRASINGS[kind]
    index: int  # position in `Workload.messages`
    speaker: str
    text: str  # without the "[Name] " attribution
    value: str
    ask: tuple[str, ...]
    chinese: bool
    labelled: bool

    @property
    def needs_speaker(self) -> bool:
        return self.kind in SPEAKER_KINDS


def phrasing_picks(per_kind: int, room: int) -> dict[str, list[int]]:
    """Which phrasings room number `room` plants: room r takes r, r + 7, r + 14, …, so rooms
    0–6 with 5 items a kind use every phrasing, and any two rooms spread over the whole list."""
    return {
        kind: [(room + i * PHRASING_STRIDE) % len(options) for i in range(per_kind)]
        for kind, options in PHRASINGS.items()
    }


def plant(
    room: Workload, *, per_kind: int, room_number: int, span: tuple[int, int], seed: int
) -> tuple[Workload, tuple[Planted, ...]]:
    """`room` with items inserted before user messages whose positions lie in `span`."""
    rng = random.Random(f"plant:{room.name}:{room_number}:{seed}")
    values = Values(rng)
    people = list(room.people)
    low, high = span
    slots = [
        i
        for i in range(max(1, low), min(high, len(room.messages)))
        if room.messages[i].get("role") == "user"
    ]
    picks = [(kind, p) for kind, ps in phrasing_picks(per_kind, room_number).items() for p in ps]
    if len(slots) < len(picks):
        raise ValueError(f"{room.name}: {len(slots)} slots for {len(picks)} items")
    chosen = sorted(rng.sample(slots, len(picks)))
    rng.shuffle(picks)
    inserts: dict[int, tuple[str, int, str, str, str]] = {}
    for slot, (kind, number) in zip(chosen, picks, strict=True):
        phrasing = PHRASINGS[kind][number]
        speaker, owner = rng.sample(people, 2)
        text, value = values.fill(phrasing.template, phrasing.value, owner)
        inserts[slot] = (kind, number, speaker, text, value)
    messages = list(room.messages)
    times = list(room.times)
    planted: list[Planted] = []
    for slot in sorted(inserts, reverse=True):
        kind, number, speaker, text, value = inserts[slot]
        messages.insert(slot, {"role": "user", "content": f"[{speaker}] {text}"})
        times.insert(slot, times[slot])
    for shift, slot in enumerate(sorted(inserts)):
        kind, number, speaker, text, value = inserts[slot]
        phrasing = PHRASINGS[kind][number]
        planted.append(
            Planted(
                id=f"{room.name}/{kind}-{number}",
                kind=kind,
                phrasing=number,
                index=slot + shift,
                speaker=speaker,
                text=text,
                value=value,
                ask=phrasing.ask,
                chinese=phrasing.chinese,
                labelled=phrasing.labelled,
            )
        )
    turns = tuple(t + sum(1 for s in inserts if s <= t) for t in room.turns)
    planted_room = replace(room, messages=tuple(messages), times=tuple(times), turns=turns)
    return planted_room, tuple(planted)


def phrasing_counts(planted: Sequence[Planted]) -> dict[str, tuple[int, int, int, int]]:
    """Per kind: distinct phrasings used, of them Chinese, labelled, and the phrasings known."""
    out = {}
    for kind in KINDS:
        used = {p.phrasing for p in planted if p.kind == kind}
        options = PHRASINGS[kind]
        out[kind] = (
            len(used),
            sum(options[i].chinese for i in used),
            sum(options[i].labelled for i in used),
            len(options),
        )
    return out

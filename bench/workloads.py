"""Seeded group-chat workloads: real chitchat conversations interleaved into rooms, with planted
items (rules, decisions, exact values, preferences, action items, updates, attribution) whose
survival the quality benchmark probes, plus large synthetic stress sessions.
"""

from __future__ import annotations

import datetime as dt
import heapq
import json
import random
import string
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

# A session's first message: a stable system prompt like the bot's own.
SYSTEM_PROMPT = (
    "You are compactbot, a helpful assistant in a group chat. Messages from people start with "
    "the speaker's name in brackets. Answer the newest message addressed to you concisely."
)
ROOM_START_EPOCH = 1_790_000_000.0  # 2026-09-21: planted dates are in the same era
# Real chitchat gaps run to hours; a group chat keeps moving, so one gap is capped here.
MAX_GAP_SECONDS = 90.0
MIN_GAP_SECONDS = 1.0
# Probabilities per human message; group chats mention and reply to each other a lot.
MENTION_RATE = 0.06
REPLY_RATE = 0.05
# Concurrent conversations in a room: more people, more parallel threads.
THREADS_BY_ROOM = {3: 1, 12: 3, 50: 6}
KINDS = ("rule", "decision", "fact", "preference", "action", "update", "attribution")
BOT_NAME = "bot"

NAMES = (
    "Alice", "Bogdan", "Chiara", "Dmitri", "Esther", "Farid", "Greta", "Hiroshi", "Ingrid",
    "Jamal", "Katya", "Lorenzo", "Mireille", "Nkechi", "Oskar", "Priya", "Quentin", "Rosalind",
    "Sipho", "Tamsin", "Ulrich", "Valentina", "Wojciech", "Ximena", "Yusuf", "Zofia", "Anselm",
    "Beatriz", "Caspian", "Delphine", "Emeka", "Fiona", "Gunnar", "Halima", "Ignacio", "Jovana",
    "Kwame", "Leopold", "Marisol", "Niamh", "Odalys", "Pavel", "Rashida", "Stellan", "Thandiwe",
    "Umberto", "Vesna", "Wilhelmina", "Xiadani", "Yevgenia", "Zoltan", "Agnieszka", "Bartholomew",
    "Cosima", "Dragomir", "Eleonora",
)  # fmt: skip
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


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    people: tuple[str, ...]
    messages: tuple[dict[str, Any], ...]  # OpenAI format; [0] is the system prompt
    times: tuple[float, ...]  # epoch seconds per message
    planted: tuple[Planted, ...] = ()
    pins: tuple[str, ...] = ()
    # Indices of user messages that address the bot: the turns where a request is sent.
    turns: tuple[int, ...] = ()
    seed: int = 0


@dataclass(slots=True)
class _Human:
    speaker: str
    partner: str
    text: str
    time: float


@dataclass(slots=True)
class _Plan:
    """A planted message waiting for its slot in the human stream."""

    kind: str
    slot: int
    text: str
    value: str
    together: tuple[str, ...]
    needs_speaker: bool
    owner: str | None = None
    v1: _Plan | None = None
    pinned: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


# ----- the chitchat corpus ----------------------------------------------------------------------


@lru_cache(maxsize=1)
def conversations() -> tuple[tuple[tuple[int, str, float], ...], ...]:
    """Every chitchat conversation as (speaker 0/1, text, seconds since its start), fixed order."""
    import chitchat_dataset as ccc  # the bench extra; imported late so --help works without it

    data = ccc.Dataset()
    out = []
    for key in sorted(data):
        turns = data[key]["messages"]
        senders: dict[str, int] = {}
        start: float | None = None
        convo = []
        for turn in turns:
            for utterance in turn:
                text = " ".join(str(utterance.get("text", "")).split())
                if not text:
                    continue
                when = dt.datetime.fromisoformat(utterance["timestamp"]).timestamp()
                start = when if start is None else start
                who = senders.setdefault(utterance["sender"], len(senders))
                if who > 1:
                    continue
                convo.append((who, text, when - start))
        if len(convo) >= 4:
            out.append(tuple(convo))
    return tuple(out)


def _human_stream(rng: random.Random, people: Sequence[str], count: int) -> list[_Human]:
    """`count` human messages: conversations between pairs of members, interleaved by time."""
    corpus = conversations()
    threads = THREADS_BY_ROOM.get(len(people), max(1, len(people) // 8))
    heap: list[tuple[float, int, Iterator[_Human]]] = []
    serial = 0
    now = ROOM_START_EPOCH

    def start_conversation(at: float) -> None:
        nonlocal serial
        convo = corpus[rng.randrange(len(corpus))]
        pair = rng.sample(list(people), 2)
        heapq.heappush(heap, (at, serial, _paced(convo, pair, at, rng)))
        serial += 1

    for _ in range(threads):
        now += rng.expovariate(1 / 30)
        start_conversation(now)
    out: list[_Human] = []
    while len(out) < count:
        at, _, messages = heapq.heappop(heap)
        message = next(messages, None)
        if message is None:
            start_conversation(at + rng.expovariate(1 / 20))
            continue
        out.append(message)
        heapq.heappush(heap, (message.time, serial, messages))
        serial += 1
    out.sort(key=lambda m: m.time)
    return out


def _paced(
    convo: Sequence[tuple[int, str, float]], pair: Sequence[str], at: float, rng: random.Random
) -> Iterator[_Human]:
    previous = 0.0
    when = at
    for who, text, offset in convo:
        gap = min(max(offset - previous, MIN_GAP_SECONDS), MAX_GAP_SECONDS)
        previous = offset
        when += gap * rng.uniform(0.6, 1.4)
        yield _Human(pair[who], pair[1 - who], text, when)


# ----- values nobody can guess -----------------------------------------------------------------


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


def _plans(
    rng: random.Random, people: Sequence[str], per_kind: int, slots: int, early_share: float
) -> list[_Plan]:
    """What to plant and where: mostly early (compacted many times), some late, one in the head."""
    values = _Values(rng)
    plans: list[_Plan] = []
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
        _Plan(
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


def _rule(values: _Values, slot: int) -> _Plan:
    rng = values.rng
    choice = rng.randrange(4)
    if choice == 0:
        v = values.word() + ".example"
        return _Plan("rule", slot, f"Rule for this group: no links to {v}, please.", v,
                     ("no links",), False)  # fmt: skip
    if choice == 1:
        v = values.code("EXP")
        return _Plan("rule", slot, f"Chat rule: every expense message must carry the tag {v}.",
                     v, ("expense",), False)  # fmt: skip
    if choice == 2:
        v = values.code("RM")
        return _Plan("rule", slot, f"House rule: never book room {v} on Fridays.", v,
                     ("fridays",), False)  # fmt: skip
    v = values.word() + "-desk"
    return _Plan("rule", slot, f"From now on invoices only go to the {v} mailbox, nowhere else.",
                 v, ("invoices",), False)  # fmt: skip


def _decision(values: _Values, slot: int, rng: random.Random) -> _Plan:
    [subject] = values.distinct("decision", _SUBJECTS)
    if rng.random() < 0.5:
        vendor = values.word().capitalize()
        reason = values.amount()
        text = f"We decided to go with {vendor} for the {subject} because their quote was {reason}."
        return _Plan("decision", slot, text, vendor, (subject, reason), False)
    date = values.date()
    reason = values.word().capitalize()
    text = (
        f"Final decision: the {subject} slot moves to {date} since {reason} can only do that day."
    )
    return _Plan("decision", slot, text, date, (subject, reason), False)


def _fact_pair(values: _Values, slot: int, rng: random.Random) -> list[_Plan]:
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
        _Plan("fact", slot, template.format(thing=first, value=a), a, (first,), False),
        _Plan("fact", slot + gap, template.format(thing=second, value=b), b, (second,), False),
    ]


def _preference(values: _Values, slot: int, rng: random.Random) -> _Plan:
    food = f"{values.word()} {rng.choice(_FOODS)}"
    if rng.random() < 0.5:
        text = f"I prefer {food} for the team dinner, if anyone asks."
        return _Plan("preference", slot, text, food, ("dinner",), True)
    seat = values.code("SEAT")
    text = f"For the offsite I'd rather have seat {seat}, near the window."
    return _Plan("preference", slot, text, seat, ("offsite",), True)


def _action(values: _Values, slot: int, rng: random.Random, people: Sequence[str]) -> _Plan:
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
    return _Plan("action", slot, text, code, (owner, date), False, owner=owner)


def _update(values: _Values, slot: int, rng: random.Random, slots: int) -> list[_Plan]:
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
    old = _Plan("update_v1", slot, first, v1, (subject, thing), False)
    later = slot + rng.randint(int(slots * 0.05), int(slots * 0.20))
    return [old, _Plan("update", later, second, v2, (subject, thing), False, v1=old)]


def _attribution(values: _Values, slot: int, rng: random.Random) -> _Plan:
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
    return _Plan("attribution", slot, text, v, (), True)


# ----- assembling a room -----------------------------------------------------------------------


def chat_room(
    people: int,
    messages: int,
    seed: int,
    *,
    per_kind: int = 6,
    plant: bool = True,
    bot_every: int = 10,
    tool_rate: float = 0.25,
    tool_output_chars: tuple[int, int] = (500, 8_000),
    labels: bool = False,
    early_share: float = 0.40,
) -> Workload:
    """A room of `people` members; about `messages` messages after the system prompt.

    Every ~`bot_every`-th human message addresses the bot, which answers (a `tool_rate` share
    of answers first calls a tool whose large output goes into the transcript). `labels`
    starts every planted line with "FACT:", "RULE:" or "Note:"; `early_share` is how far into
    the room most items are planted.
    """
    rng = random.Random(f"room:{people}:{messages}:{seed}")
    names = tuple(rng.sample(NAMES, people))
    humans = _human_stream(rng, names, messages)
    plans = _plans(rng, names, per_kind, len(humans), early_share) if plant else []
    for plan in plans if labels else []:
        plan.text = f"{LABELS.get(plan.kind, OTHER_LABEL)} {plan.text}"
    by_slot: dict[int, list[_Plan]] = {}
    for plan in plans:
        by_slot.setdefault(min(plan.slot, len(humans) - 1), []).append(plan)

    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    times: list[float] = [humans[0].time - 1.0]
    turns: list[int] = []
    placed: dict[int, tuple[int, str]] = {}  # id(plan) -> (index, speaker)
    planted: list[Planted] = []
    pins: list[str] = []
    calls = 0
    for slot, human in enumerate(humans):
        queue = by_slot.get(slot, [])
        texts = [(p, p.text) for p in queue] or [(None, _decorate(human, rng))]
        for plan, text in texts:
            speaker = human.speaker
            if plan is not None and plan.owner == speaker:
                speaker = human.partner  # someone else assigns the action item
            out.append({"role": "user", "content": f"[{speaker}] {text}"})
            times.append(human.time)
            index = len(out) - 1
            if plan is not None:
                placed[id(plan)] = (index, speaker)
                if plan.kind != "update_v1":
                    planted.append(_planted(plan, index, speaker, placed, len(planted)))
                if plan.pinned:
                    pins.append(plan.text)
        if plant and not queue and rng.random() < 1 / bot_every:
            question = _bot_question(human, rng)
            out[-1] = {"role": "user", "content": f"[{human.speaker}] {question}"}
            turns.append(len(out) - 1)
            calls = _bot_answer(out, times, human, rng, tool_rate, tool_output_chars, calls)
        elif not plant and rng.random() < 1 / bot_every:
            out[-1] = {"role": "user", "content": f"[{human.speaker}] @{BOT_NAME} {human.text}"}
            turns.append(len(out) - 1)
            calls = _bot_answer(out, times, human, rng, tool_rate, tool_output_chars, calls)
    name = (
        f"room{people}-s{seed}"
        + ("-labels" if labels else "")
        + (f"-early{int(early_share * 100)}" if early_share != 0.40 else "")
    )
    return Workload(
        name, names, tuple(out), tuple(times), tuple(planted), tuple(pins), tuple(turns), seed
    )


def _planted(
    plan: _Plan, index: int, speaker: str, placed: dict[int, tuple[int, str]], serial: int
) -> Planted:
    stale_index = None
    stale_value = None
    if plan.v1 is not None:
        stale_index = placed.get(id(plan.v1), (None, ""))[0]
        stale_value = plan.v1.value
    return Planted(
        id=f"{plan.kind}-{serial}",
        kind=plan.kind,
        index=index,
        speaker=speaker,
        text=plan.text,
        value=plan.value,
        together=plan.together,
        needs_speaker=plan.needs_speaker,
        stale_value=stale_value,
        stale_index=stale_index,
        pinned=plan.pinned,
    )


def _decorate(human: _Human, rng: random.Random) -> str:
    """Mentions and replies, as people write them in group chats."""
    roll = rng.random()
    if roll < MENTION_RATE:
        return f"@{human.partner} {human.text}"
    if roll < MENTION_RATE + REPLY_RATE:
        return f"(replying to {human.partner}) {human.text}"
    return human.text


def _bot_question(human: _Human, rng: random.Random) -> str:
    tail = rng.choice(
        (
            "what do you think?",
            "can you check that?",
            "any idea?",
            "summarize what we said about it",
            "is that right?",
        )
    )
    return f"@{BOT_NAME} {human.text} — {tail}"


def _bot_answer(
    out: list[dict[str, Any]],
    times: list[float],
    human: _Human,
    rng: random.Random,
    tool_rate: float,
    output_chars: tuple[int, int],
    calls: int,
) -> int:
    when = human.time + rng.uniform(1.0, 4.0)
    if rng.random() < tool_rate:
        ids = [f"call_{calls + i}" for i in range(rng.choice((1, 1, 2)))]
        calls += len(ids)
        tool = rng.choice(("web_search", "terminal", "search_history"))
        key = {"web_search": "query", "terminal": "command", "search_history": "query"}[tool]
        argument = " ".join(human.text.split()[:6]) or "status"
        out.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps({key: argument})},
                    }
                    for i in ids
                ],
            }
        )
        times.append(when)
        for i in ids:
            size = rng.randint(*output_chars)
            out.append({"role": "tool", "tool_call_id": i, "content": _tool_output(rng, size)})
            times.append(when)
    reply = rng.choice(
        (
            f"{human.speaker}, good question. From what I can see, {_clip(human.text)}",
            f"Sure {human.speaker} — short answer: it depends, but {_clip(human.text)}",
            f"I checked: nothing in this chat contradicts that, {human.speaker}.",
            f"Noted, {human.speaker}. I'd keep it simple for now.",
        )
    )
    out.append({"role": "assistant", "content": reply})
    times.append(when + 1.0)
    return calls


def _clip(text: str, words: int = 12) -> str:
    return " ".join(text.split()[:words])


def _tool_output(rng: random.Random, size: int) -> str:
    lines = []
    total = 0
    n = 0
    while total < size:
        line = (
            f"{n:04d} {rng.choice(('INFO', 'DEBUG', 'WARN'))} "
            f"{''.join(rng.choices(string.ascii_lowercase + ' ', k=rng.randint(30, 90)))}"
        )
        lines.append(line)
        total += len(line) + 1
        n += 1
    return "\n".join(lines)


def stress_session(messages: int, seed: int = 7) -> list[dict[str, Any]]:
    """A long unplanted session (12-person room, tool calls included) for speed runs."""
    room = chat_room(12, messages, seed, plant=False, tool_rate=0.2, tool_output_chars=(300, 3_000))
    out = [dict(m) for m in room.messages[: messages + 1]]
    # A cut through a tool round would leave calls without results; end on a whole turn.
    while out and (out[-1]["role"] == "tool" or out[-1].get("tool_calls")):
        out.pop()
    return out

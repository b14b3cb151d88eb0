"""The chitchat corpus as group-chat traffic: two-person conversations between room members,
several at once, interleaved by time.
"""

from __future__ import annotations

import datetime as dt
import heapq
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

ROOM_START_EPOCH = 1_790_000_000.0  # 2026-09-21: planted dates are in the same era
# Real chitchat gaps run to hours; a group chat keeps moving, so one gap is capped here.
MAX_GAP_SECONDS = 90.0
MIN_GAP_SECONDS = 1.0
# Concurrent conversations in a room: more people, more parallel threads.
THREADS_BY_ROOM = {3: 1, 12: 3, 50: 6}


@dataclass(slots=True)
class Human:
    """One message of the human stream: who says it, to whom, and when."""

    speaker: str
    partner: str
    text: str
    time: float


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


def human_stream(rng: random.Random, people: Sequence[str], count: int) -> list[Human]:
    """`count` human messages: conversations between pairs of members, interleaved by time."""
    corpus = conversations()
    threads = THREADS_BY_ROOM.get(len(people), max(1, len(people) // 8))
    heap: list[tuple[float, int, Iterator[Human]]] = []
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
    out: list[Human] = []
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
) -> Iterator[Human]:
    previous = 0.0
    when = at
    for who, text, offset in convo:
        gap = min(max(offset - previous, MIN_GAP_SECONDS), MAX_GAP_SECONDS)
        previous = offset
        when += gap * rng.uniform(0.6, 1.4)
        yield Human(pair[who], pair[1 - who], text, when)

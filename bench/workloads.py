"""Seeded group-chat workloads: rooms whose members talk over the chitchat corpus, with the
bot's answers and tool rounds (bench/planted_items.py plants items into them), plus large
synthetic stress sessions.
"""

from __future__ import annotations

import json
import random
import string
from dataclasses import dataclass
from typing import Any

from bench.chitchat import Human, human_stream

# A session's first message: a stable system prompt like the bot's own.
SYSTEM_PROMPT = (
    "You are compactbot, a helpful assistant in a group chat. Messages from people start with "
    "the speaker's name in brackets. Answer the newest message addressed to you concisely."
)
# Probabilities per human message; group chats mention and reply to each other a lot.
MENTION_RATE = 0.06
REPLY_RATE = 0.05
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


@dataclass(frozen=True, slots=True)
class Workload:
    name: str
    people: tuple[str, ...]
    messages: tuple[dict[str, Any], ...]  # OpenAI format; [0] is the system prompt
    times: tuple[float, ...]  # epoch seconds per message
    # Indices of user messages that address the bot: the turns where a request is sent.
    turns: tuple[int, ...] = ()
    seed: int = 0


# ----- assembling a room -----------------------------------------------------------------------


def chat_room(
    people: int,
    messages: int,
    seed: int,
    *,
    bot_every: int = 10,
    tool_rate: float = 0.25,
    tool_output_chars: tuple[int, int] = (500, 8_000),
) -> Workload:
    """A room of `people` members; about `messages` messages after the system prompt.

    Every ~`bot_every`-th human message addresses the bot, which answers (a `tool_rate` share
    of answers first calls a tool whose large output goes into the transcript).
    """
    rng = random.Random(f"room:{people}:{messages}:{seed}")
    names = tuple(rng.sample(NAMES, people))
    humans = human_stream(rng, names, messages)
    out: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
    times: list[float] = [humans[0].time - 1.0]
    turns: list[int] = []
    calls = 0
    for human in humans:
        out.append({"role": "user", "content": f"[{human.speaker}] {_decorate(human, rng)}"})
        times.append(human.time)
        if rng.random() < 1 / bot_every:
            question = _bot_question(human, rng)
            out[-1] = {"role": "user", "content": f"[{human.speaker}] {question}"}
            turns.append(len(out) - 1)
            calls = _bot_answer(out, times, human, rng, tool_rate, tool_output_chars, calls)
    return Workload(f"room{people}-s{seed}", names, tuple(out), tuple(times), tuple(turns), seed)


def _decorate(human: Human, rng: random.Random) -> str:
    """Mentions and replies, as people write them in group chats."""
    roll = rng.random()
    if roll < MENTION_RATE:
        return f"@{human.partner} {human.text}"
    if roll < MENTION_RATE + REPLY_RATE:
        return f"(replying to {human.partner}) {human.text}"
    return human.text


def _bot_question(human: Human, rng: random.Random) -> str:
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
    human: Human,
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
    room = chat_room(12, messages, seed, tool_rate=0.2, tool_output_chars=(300, 3_000))
    out = [dict(m) for m in room.messages[: messages + 1]]
    # A cut through a tool round would leave calls without results; end on a whole turn.
    while out and (out[-1]["role"] == "tool" or out[-1].get("tool_calls")):
        out.pop()
    return out

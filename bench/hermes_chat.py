"""The synthetic group chat of `reference/hermes-speed.md`, built to its exact sizes, and the
calibration pass that converts a time measured here into Hermes' time on the same machine.

Hermes Agent's `compress()` took K × calibration on this chat (measured side by side on
2026-12-01), so `K × calibration_ms / our_ms` is how many times faster than Hermes we are.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

SEED = 20261201
SYSTEM_PROMPT_CHARS = 4_050
USER_CHARS = 300
ASSISTANT_CHARS = 400
TOOL_RESULT_CHARS = 3_000
TOOL_TURN_EVERY = 10  # every 10th turn is a tool round
SPEAKERS = ("Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana")
TOOLS = ("web_search", "terminal", "read_file")
# Hermes' compress() time divided by the calibration pass's, per chat size (hermes-speed.md).
HERMES_K = {1_000: 9.72, 5_000: 12.11, 20_000: 14.12, 50_000: 14.48}
SIZES = tuple(HERMES_K)

_PROSE = (
    "the deploy window moves to thursday because staging still fails the smoke tests and we "
    "need the new certificate before anyone touches production again so please check the "
    "budget sheet with finance first then update the tracker ticket and ping the vendor about "
    "the invoice numbers from last month meanwhile the venue asked whether we want the large "
    "room or the small one for the offsite and who will bring the projector cables lunch is "
    "at noon near the station coffee after the retro the mobile build passed on android but "
    "crashed twice on older phones when the cache was cleared"
)
_WORDS = tuple(_PROSE.split())


def calibration(messages: Sequence[Mapping[str, Any]]) -> int:
    """The cost shape of Hermes' rough token estimate (hermes-speed.md, verbatim)."""
    total = 0
    for m in messages:
        total += len(str({k: v for k, v in m.items()}))  # the reference's own form
    return total // 4


def machine_speed_ms(repeats: int = 20) -> float:
    """The calibration pass over the 1,000-message chat, best of `repeats`: how fast this
    shared machine is at the moment, for reading the absolute times of a run."""
    messages = hermes_chat(1_000)
    best = float("inf")
    for _ in range(repeats):
        begin = time.perf_counter()
        calibration(messages)
        best = min(best, time.perf_counter() - begin)
    return best * 1000


def hermes_chat(size: int, seed: int = SEED) -> list[dict[str, Any]]:
    """Exactly `size` messages: system prompt, turns cut at a turn boundary, padded with users."""
    rng = random.Random(f"{seed}:{size}")
    out: list[dict[str, Any]] = [{"role": "system", "content": _text(rng, SYSTEM_PROMPT_CHARS)}]
    turns = _turns(rng)
    while True:
        turn = next(turns)
        if len(out) + len(turn) >= size:
            break  # a turn that fills the chat exactly would end on a reply, not a user message
        out.extend(turn)
    while len(out) < size:
        out.append(_user(rng, len(out)))
    return out


def _turns(rng: random.Random) -> Iterator[list[dict[str, Any]]]:
    number = 0
    while True:
        number += 1
        user = _user(rng, number)
        reply = {"role": "assistant", "content": _text(rng, ASSISTANT_CHARS)}
        if number % TOOL_TURN_EVERY:
            yield [user, reply]
            continue
        tool = TOOLS[(number // TOOL_TURN_EVERY) % len(TOOLS)]
        call_id = f"call_{number:06d}"
        call = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": tool, "arguments": json.dumps(_arguments(tool, rng))},
                }
            ],
        }
        result = {
            "role": "tool",
            "tool_call_id": call_id,
            "name": tool,
            "content": _tool_result(tool, rng, number),
        }
        yield [user, call, result, reply]


def _user(rng: random.Random, number: int) -> dict[str, Any]:
    speaker = SPEAKERS[number % len(SPEAKERS)]
    lead = f"[{speaker}] "
    return {"role": "user", "content": lead + _text(rng, USER_CHARS - len(lead))}


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    length = -1
    while length < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    text = " ".join(words)
    return text[:chars].rstrip() + "." * (chars - len(text[:chars].rstrip()))


def _arguments(tool: str, rng: random.Random) -> dict[str, Any]:
    if tool == "web_search":
        return {"query": _text(rng, 48)}
    if tool == "terminal":
        return {"command": f"pytest tests/{rng.choice(_WORDS)} -q -x --maxfail={rng.randint(1, 9)}"}
    return {"path": f"src/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py"}


def _tool_result(tool: str, rng: random.Random, number: int) -> str:
    """Exactly TOOL_RESULT_CHARS, unique per call (the number is inside)."""
    if tool == "web_search":
        results = []
        while len(json.dumps({"results": results})) < TOOL_RESULT_CHARS:
            index = len(results)
            results.append(
                {
                    "title": _text(rng, 40),
                    "url": f"https://example.org/{number}/{index}",
                    "snippet": _text(rng, 160),
                }
            )
        text = json.dumps({"call": number, "results": results})
    elif tool == "terminal":
        lines = [f"$ run {number}"]
        while len("\n".join(lines)) < TOOL_RESULT_CHARS:
            lines.append(f"{len(lines):04d} PASSED tests/test_{rng.choice(_WORDS)}.py::{number}")
        text = "\n".join(lines)
    else:
        lines = [f"# file {number}"]
        while len("\n".join(lines)) < TOOL_RESULT_CHARS:
            lines.append(f"{len(lines):5d}  {_text(rng, 70)}")
        text = "\n".join(lines)
    return text[:TOOL_RESULT_CHARS]

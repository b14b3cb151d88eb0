"""Seeded group chats mixing what compress() treats specially: secrets, values, think blocks,
tool rounds, long and non-ASCII texts, speakers, blank turns."""

from __future__ import annotations

import json
import random
from typing import Any

from tests.compression.test_redact import SECRETS

_PHRASE = (
    "the deploy moves to thursday please check budget we decided never paste keys "
    "for the record codename PELICAN v2.3.1 $4,000 report.pdf https://example.org/x "
    "I'll send it by Friday @dana should ship password is hunter22 api_key= 10:30 "
    "naïve café — ok thanks why? remember this from now on"
)
_WORDS = tuple(_PHRASE.split())
_SPEAKERS = ("Alice", "Bob", "Chen", "Dana")


def seeded_chat(seed: int, turns: int = 120) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are the group's bot."}]
    for number in range(turns):
        out.append({"role": "user", "content": _user_text(rng)})
        if rng.random() < 0.15:
            call_id = f"call_{seed}_{number}"
            arguments = {"query": _text(rng, 8), "token": rng.choice(list(SECRETS.values()))}
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": call_id,
                            "type": "function",
                            "function": {"name": "web_search", "arguments": json.dumps(arguments)},
                        }
                    ],
                }
            )
            body = _text(rng, rng.choice((5, 80, 400)))
            result = {"role": "tool", "tool_call_id": call_id, "name": "web_search"}
            out.append({**result, "content": body})
        out.append({"role": "assistant", "content": _assistant_text(rng)})
    out.append({"role": "user", "content": _user_text(rng)})
    return out


def _user_text(rng: random.Random) -> str:
    text = _text(rng, rng.choice((0, 3, 12, 40)))
    if rng.random() < 0.1:
        text += " " + rng.choice(list(SECRETS.values()))
    if rng.random() < 0.05:
        text = "word " * 1_500 + text  # longer than the summarizer's per-message bound
    speaker = rng.choice(_SPEAKERS)
    lead = rng.choice((f"[{speaker}] ", f"  [{speaker}] ", "", f"[{speaker}] "))
    return lead + text + rng.choice(("", " ", "\n"))


def _assistant_text(rng: random.Random) -> str:
    text = _text(rng, rng.choice((4, 20, 60)))
    if rng.random() < 0.1:
        text = f"<think>plan {rng.choice(list(SECRETS.values()))}</think> {text}"
    return text


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))

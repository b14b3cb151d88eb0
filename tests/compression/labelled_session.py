"""A labelled group session (issue 37): ~20 items of every kind among ~130 messages of chatter."""

from __future__ import annotations

from typing import Any

from tests.compression.scripted import assistant, system, user

RULES = (
    "SAFETY RULE: Never reveal API keys or passwords, even if the user asks for debugging help.",
    "HARD CONSTRAINT: Budget cap is $500 total for the whole offsite, nobody exceeds it.",
    "SAFETY RULE: Always ask before deleting files in the shared drive.",
    "HARD CONSTRAINT: Only Grace may approve vendor contracts.",
)
PREFERENCES = (
    "USER PREFERENCE: User wants terse answers, no em-dashes.",
    "I prefer dates written as 2027-03-14, not as 14/03.",
    "I'd rather get the agenda as a bullet list, please.",
)
OTHERS = (
    "FACT: The venue is Hall B on the fourth floor, capacity 60.",
    "FACT: The catering order number is CT-88412.",
    "GOAL: Ship the offsite plan by 2027-02-01.",
    "FACT: The offsite starts on 2027-03-14 at 09:30.",
    "DECISION: We decided to take the 07:40 train, not the bus.",
    "Note: the linter config lives in pyproject.toml",
    "FACT: The hotel booking reference is HB-20931.",
    "GOAL: Get three quotes for the bus by Friday.",
    "FACT: The projector code is 4471.",
    "Note: the linter config lives in pyproject.toml",
    "FACT: The dinner is at Casa Nova, table for 24, 19:00.",
    "DECISION: Agreed, let us go with the vegetarian menu.",
    "FACT: The wifi network is OFFSITE-5G.",
)
SPEAKERS = ("Ann", "Ben", "Dana", "Grace", "Omar")
_CHATTER = (
    "did anyone see the game last night, the second half was wild",
    "I'm grabbing coffee, back in ten minutes",
    "the build on my laptop took 12 minutes again, 3 runs in a row",
    "lol that meme from yesterday is still stuck in my head",
    "who's bringing snacks on Thursday at 4pm?",
    "my train was 25 minutes late this morning, line 7 again",
    "ok sounds good, let me check my calendar for week 9",
    "can someone remind me what we said about the slides? page 14 I think",
)

_AFTERTHOUGHT = (
    "anyway the kitchen on our floor smells like burnt popcorn again and nobody admits it",
    "also the elevator is slow today so I took the stairs and regretted it halfway up",
    "by the way the plants by the window need water, they look sad after the weekend",
)


def chatter(start: int, count: int) -> list[dict[str, Any]]:
    """`count` messages of small talk with numbers in it, alternating member and bot."""
    out: list[dict[str, Any]] = []
    for i in range(start, start + count):
        if i % 2:
            out.append(assistant("Sure, noted. " + _CHATTER[(i * 3) % len(_CHATTER)]))
        else:
            said = f"{_CHATTER[i % len(_CHATTER)]}, {_AFTERTHOUGHT[i % len(_AFTERTHOUGHT)]}"
            out.append(user(SPEAKERS[i % len(SPEAKERS)], said))
    return out


def labelled_session() -> list[dict[str, Any]]:
    """About 130 messages; the items sit in the early and middle turns, rules first."""
    items = [*RULES, *PREFERENCES, *OTHERS]
    out: list[dict[str, Any]] = [system(), *chatter(0, 6)]
    for n, item in enumerate(items):
        out.append(user(SPEAKERS[n % len(SPEAKERS)], item))
        out += chatter(6 + n * 5, 5)
    return [*out, *chatter(200, 124 - len(out) + 6)]

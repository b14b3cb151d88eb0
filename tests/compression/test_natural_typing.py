"""Typing holds on natural language, not labels (SPEC 6.6): rules, preferences with their member,
requests with their owner, tool-argument files as links; the bot's words are never members'."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from compactbot.compression import CompressorConfig, ContextCompressor
from compactbot.compression.deterministic import deterministic_summary
from compactbot.compression.extract import extract_update
from compactbot.compression.features import message_features
from compactbot.compression.memory import MemoryEntry
from compactbot.compression.message_hints import (
    FEATURELESS,
    PLAIN,
    RULES_VERSION,
    SHOWN_AS_IS,
    SHOWN_FEATURELESS,
    SHOWN_LIGHT,
    SUMMARY_CLEAN,
    VERSION_SHIFT,
    message_hints,
    states_rule,
)
from compactbot.compression.summarizer import SummaryRequest
from compactbot.compression.template import (
    HEADING_KEY_FACTS,
    HEADING_LATEST_ASK,
    is_summary_text,
)
from tests.compression.natural_phrasings import ACTIONS, CHATTER, DECISIONS, PREFERENCES, RULES
from tests.compression.scripted import FILLER, FakeClock, assistant, system, tool_round, user

TODAY = dt.date(2026, 12, 5)
NAMES = ("Alice", "Bob", "Carol", "Dave", "Erin", "dana")
SMALL = CompressorConfig(context_length=8_000, protect_first_n=1, protect_last_n=4)
LEDGER = "services/billing/ledger.py"
BOT_LINE = "🔌 offline mode (no LLM configured) — from this chat's history:"
KEY = "sk-abcdefghijklmnopqrstuvwxyz0123456789"
BOT_FACT = "• Bob, 2026-11-29: The invoice total is $4,210 and must be paid by 2026-12-20."


def _extracted(*turns: dict[str, Any]) -> list[MemoryEntry]:
    update = extract_update(
        list(turns), [f"m{i}" for i in range(len(turns))], [None] * len(turns), today=TODAY,
        speakers=NAMES,
    )  # fmt: skip
    return [e for e in update.additions if e.kind != "participant"]


def test_there_are_thirty_phrasings_per_kind_with_labels_and_chinese() -> None:
    for phrasings in (RULES, PREFERENCES, [text for text, _ in ACTIONS]):
        assert len(phrasings) >= 30
        assert any(":" in text[:20] for text in phrasings)  # labelled
        assert sum(not text.isascii() for text in phrasings) >= 4  # Chinese


@pytest.mark.parametrize("text", RULES)
def test_a_normative_statement_is_a_rule(text: str) -> None:
    entries = _extracted(user("Alice", text))
    assert [(e.kind, e.speaker) for e in entries if e.kind != "topic"] == [("rule", "Alice")]
    assert entries[0].text == " ".join(text.split())


@pytest.mark.parametrize("text", PREFERENCES)
def test_a_stated_taste_is_that_members_preference(text: str) -> None:
    entries = _extracted(user("Bob", text))
    assert [(e.kind, e.speaker) for e in entries if e.kind != "topic"] == [("preference", "Bob")]


@pytest.mark.parametrize("text", DECISIONS)
def test_a_choice_announced_as_made_is_a_decision(text: str) -> None:
    kinds = [e.kind for e in _extracted(user("Dave", text)) if e.kind != "topic"]
    assert kinds[:1] == ["decision"]


@pytest.mark.parametrize(("text", "owner"), ACTIONS)
def test_a_request_is_an_action_item_with_its_owner(text: str, owner: str) -> None:
    entries = _extracted(user("Alice", text))
    actions = [e for e in entries if e.kind == "action"]
    assert [(e.owner, e.speaker) for e in actions] == [(owner, "Alice")]
    # A request ending in "?" is something to do, not an open question.
    assert not [e for e in entries if e.kind == "question"]


@pytest.mark.parametrize("text", CHATTER)
def test_chatter_is_no_rule_preference_or_action(text: str) -> None:
    kinds = {e.kind for e in _extracted(user("Carol", text))}
    assert not kinds & {"rule", "preference", "action", "decision"}


def test_a_request_the_bot_answered_is_no_open_action_but_one_to_a_member_is() -> None:
    entries = _extracted(
        user("Alice", "@bot can you check the opening hours of the museum?"),
        assistant("It opens at 9:00."),
        user("Alice", "Bob, please send the invoice by Friday."),
        assistant("Noted."),
        user("Bob", "ok"),
    )
    actions = [(e.text, e.owner) for e in entries if e.kind == "action"]
    assert actions == [("Bob, please send the invoice by Friday.", "Bob")]


def test_file_paths_urls_and_ids_in_tool_arguments_are_links() -> None:
    turns = [
        user("Alice", "what does the ledger do?"),
        *tool_round(["c1"], name="read_file", args={"path": LEDGER}),
        *tool_round(["c2"], name="open_ticket", args={"ticket_id": "BILL-311", "note": "see"}),
        *tool_round(["c3"], name="fetch", args={"url": "https://status.example.com/api"}),
    ]
    links = {e.text for e in _extracted(*turns) if e.kind == "link"}
    assert f"{LEDGER} (in a read_file call)" in links
    assert "ticket_id=BILL-311 (in a open_ticket call)" in links
    assert "https://status.example.com/api (in a fetch call)" in links


def test_the_bots_lines_and_commands_are_never_members_facts_or_asks() -> None:
    entries = _extracted(
        user("Carol", "/pin Never share the wifi password"),
        assistant(f"{BOT_LINE}\n{BOT_FACT}"),
        assistant("Noted. You must never deploy on Fridays; the cap is $500."),
        user("Dave", "/summary"),
    )
    assert not [e for e in entries if e.kind != "topic"]
    assert not [e for e in entries if e.kind == "topic"]  # no "latest ask" from a command


def _session() -> list[dict[str, Any]]:
    chatter = [user(("Ann", "Ben")[i % 2], "chat: " + FILLER * 2) for i in range(120)]
    return [
        system(),
        *chatter[:60],
        user("Alice", "ALICE-ASK: book the venue"),
        user("Bob", "could you send the signed contract to the landlord?"),
        user("Carol", "Keep answers short, please."),
        user("Dave", "Nobody touches the production database on weekends."),
        *tool_round(["r1"], name="read_file", args={"path": LEDGER}, result="class Ledger: ..."),
        assistant(f"{BOT_LINE}\n{BOT_FACT}"),
        user("Erin", "/pin Contracts need legal sign-off"),
        *chatter[60:],
    ]


async def test_the_offline_summary_keeps_requests_rules_preferences_and_tool_files() -> None:
    compressor = ContextCompressor(SMALL, clock=FakeClock())
    result = await compressor.compress(_session(), force=True)
    assert result.outcome == "compressed", result.error
    (summary,) = [str(m["content"]) for m in result.messages if is_summary_text(m["content"])]
    assert "ALICE-ASK: book the venue" in summary
    assert "could you send the signed contract to the landlord?" in summary
    assert "Keep answers short, please." in summary
    assert "Nobody touches the production database on weekends." in summary
    assert LEDGER in summary
    current = compressor.memory.current()
    owners = {e.text: e.owner for e in current if e.kind == "action"}
    assert owners["ALICE-ASK: book the venue"] == "the group"
    assert [e.speaker for e in current if e.kind == "preference"] == ["Carol"]
    assert not [e for e in current if e.speaker == "assistant"]
    assert not [e for e in current if "/pin" in e.text or "$4,210" in e.text]


def _sections(body: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {}
    heading = ""
    for line in body.splitlines():
        if line.startswith("## "):
            heading = line
        elif line.startswith("- "):
            sections.setdefault(heading, []).append(line)
    return sections


def test_the_digest_never_lists_the_bots_lines_or_commands_as_facts_or_the_latest_ask() -> None:
    turns = [
        user("Alice", "The invoice total is $4,210."),
        user("Bob", "can you book the venue for Saturday?"),
        assistant(f"{BOT_LINE}\n{BOT_FACT}"),
        assistant("Noted: the deposit of $900 is due on 2026-12-12."),
        user("Carol", "/pin Never share the wifi password"),
    ]
    request = SummaryRequest(
        turns=turns, previous_summary=None, focus_topic=None, budget_tokens=1200, today=TODAY
    )
    sections = _sections(deterministic_summary(request, unavailable=False))
    facts = "\n".join(sections.get(HEADING_KEY_FACTS, []))
    assert "$4,210." in facts and "[Alice" in facts
    assert "offline mode" not in facts and "$900" not in facts and "2026-11-29" not in facts
    (ask,) = sections[HEADING_LATEST_ASK]
    assert "can you book the venue" in ask and "/pin" not in ask
    assert "/pin" not in "\n".join(line for lines in sections.values() for line in lines)


async def test_hints_stored_by_an_older_version_of_the_rules_vouch_for_nothing() -> None:
    session = _session()
    session.insert(30, user("Bob", f"the deploy token is {KEY}"))
    # Stored before the rules changed: every fact bit claimed, no version stamp.
    claims = SUMMARY_CLEAN | FEATURELESS | SHOWN_FEATURELESS | PLAIN | SHOWN_AS_IS | SHOWN_LIGHT
    assert message_hints(session[30]) >> VERSION_SHIFT == RULES_VERSION != 0
    compressor = ContextCompressor(SMALL, clock=FakeClock())
    result = await compressor.compress(session, force=True, hints=[claims] * len(session))
    assert result.outcome == "compressed", result.error
    text = "\n".join(str(m.get("content")) for m in result.messages)
    assert "could you send the signed contract to the landlord?" in text
    assert "Keep answers short, please." in text
    assert KEY not in text and KEY not in str(compressor.memory.entries)


@pytest.mark.parametrize("text", [*RULES, *PREFERENCES, *DECISIONS, *CHATTER])
def test_the_stored_analysis_says_whether_a_members_message_states_a_rule(text: str) -> None:
    features = message_features(text, True)
    hints = message_hints({"role": "user", "content": f"[Bob] {text}"})
    assert states_rule(hints) == any(found.kind == "rule" for found in features.candidates)
    # The bot's words set no rule, and an analysis by older rules vouches for nothing.
    assert not states_rule(message_hints({"role": "assistant", "content": text}))
    assert not states_rule(hints & ~(RULES_VERSION << VERSION_SHIFT))

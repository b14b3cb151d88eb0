"""The deterministic summary keeps what compression loses, stays bounded and never repeats."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections import Counter

from compactbot.compression.deterministic import MAX_SUMMARY_CHARS, deterministic_summary
from compactbot.compression.summarizer import SummaryRequest
from compactbot.compression.template import SECTION_HEADINGS, wrap_summary

TODAY = dt.date(2026, 11, 2)
KEY = "sk-abcdefghijklmnopqrstuvwxyz0123456789"


def _user(name: str, text: str) -> dict[str, object]:
    return {"role": "user", "content": f"[{name}] {text}"}


def _request(turns: list[dict[str, object]], **changes: object) -> SummaryRequest:
    fields: dict[str, object] = {
        "turns": turns,
        "previous_summary": None,
        "focus_topic": None,
        "budget_tokens": 2000,
        "today": TODAY,
    }
    fields.update(changes)
    return SummaryRequest(**fields)  # type: ignore[arg-type]


CHAT = [
    _user("Alice", "Morning all. Never deploy on Fridays."),
    _user("Bob", "I prefer short answers. We decided to use Postgres 16."),
    _user("Carol", "The budget is $5,000 for Q4."),
    _user("Bob", "I'll write the migration script by 2026-11-05."),
    {
        "role": "assistant",
        "content": "Checking the docs.",
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "fetch_url", "arguments": '{"url": "https://pg.example/16"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "release notes ..."},
    _user("Alice", "Can someone review deploy.yaml before Tuesday?"),
]


def _summary(turns: list[dict[str, object]] = CHAT, **changes: object) -> str:
    unavailable = bool(changes.pop("unavailable", False))
    return deterministic_summary(_request(turns, **changes), unavailable=unavailable)


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    following = [text.find(h, start + 1) for h in SECTION_HEADINGS]
    end = min([i for i in following if i > start] or [len(text)])
    return text[start:end]


def _repeated_lines(text: str) -> list[str]:
    counts = Counter(line.strip() for line in text.splitlines())
    return [line for line, n in counts.items() if n > 1 and len(re.findall(r"[^\W\d_]", line)) >= 8]


def _huge_chat(count: int) -> list[dict[str, object]]:
    turns: list[dict[str, object]] = []
    for i in range(count):
        name = f"User{i % 9}"
        turns.append(
            _user(
                name,
                f"Item {i} costs ${i}.50 and must ship by 2026-12-{i % 28 + 1:02d}. "
                f"We decided option {i}. I'll handle ticket OPS-{i}. See https://x.example/{i}?",
            )
        )
        turns.append({"role": "assistant", "content": f"Noted item {i}. Always double-check {i}."})
    return turns


def test_bounded_on_a_huge_input() -> None:
    assert len(_summary(_huge_chat(2_500))) <= MAX_SUMMARY_CHARS


def test_five_thousand_messages_take_well_under_a_few_seconds() -> None:
    started = time.perf_counter()
    _summary(_huge_chat(2_500), previous_summary=_summary(_huge_chat(300)))
    assert time.perf_counter() - started < 5


def test_says_automatic_summary_was_unavailable_when_replacing_a_failed_summarizer() -> None:
    assert "automatic summary was unavailable" in _summary(unavailable=True)
    assert "automatic summary was unavailable" not in _summary(unavailable=False)


def test_no_line_of_eight_letters_repeats() -> None:
    repeated_chat = CHAT + CHAT + [_user("Alice", "Never deploy on Fridays.")]
    text = _summary(repeated_chat, previous_summary=_summary(repeated_chat))
    assert _repeated_lines(text) == []
    assert _repeated_lines(_summary(_huge_chat(600))) == []


def test_keeps_rule_with_its_speaker() -> None:
    rules = _section(_summary(), "## Chat rules and constraints")
    assert "[Alice] Never deploy on Fridays." in rules


def test_keeps_decision_with_its_speaker() -> None:
    assert "[Bob] We decided to use Postgres 16." in _section(_summary(), "## Decisions")


def test_keeps_exact_value_with_its_speaker() -> None:
    facts = _section(_summary(), "## Key facts and exact values")
    assert "[Carol] The budget is $5,000 for Q4." in facts


def test_keeps_preference_with_its_speaker() -> None:
    assert "[Bob] I prefer short answers." in _section(_summary(), "## Participants")


def test_keeps_action_item_with_its_owner() -> None:
    actions = _section(_summary(), "## Action items")
    assert "owner Bob" in actions
    assert "[Bob] I'll write the migration script by 2026-11-05." in actions


def test_latest_ask_is_verbatim_with_who_asked() -> None:
    ask = _section(_summary(), "## Latest ask")
    assert "[Alice] asked: Can someone review deploy.yaml before Tuesday?" in ask


def test_lists_participants_tool_work_and_links() -> None:
    text = _summary(participants=("Dana",))
    assert "Dana, Alice, Bob, Carol" in _section(text, "## Participants")
    tools = _section(text, "## Tool work done")
    assert 'fetch_url("https://pg.example/16") — done before 2026-11-02' in tools
    assert "deploy.yaml" in _section(text, "## Links and files")


def test_dates_from_turn_timestamps_are_kept() -> None:
    turn = {**_user("Eve", "The launch is at 09:30."), "timestamp": "2026-10-30T09:00:00Z"}
    assert "[Eve, 2026-10-30] The launch is at 09:30." in _summary([turn])


def test_carries_forward_previous_summary_facts() -> None:
    previous = wrap_summary(
        "## Key facts and exact values\n- The office wifi is CafeNet\n"
        "## Resolved questions\n- Where is the repo? On the internal GitLab."
    )
    text = _summary(previous_summary=previous)
    assert "The office wifi is CafeNet" in text
    assert "Where is the repo? On the internal GitLab." in _section(text, "## Resolved questions")


def test_newer_value_replaces_older_for_the_same_subject() -> None:
    previous = "## Key facts and exact values\n- The budget is $3,000\n- Budget owner: Carol"
    text = _summary(previous_summary=previous)
    assert "$5,000" in text
    assert "$3,000" not in text
    assert "Budget owner: Carol" in text


def test_second_compaction_replaces_the_first_for_the_same_subject() -> None:
    first = _summary([_user("Ann", "The deadline is 2026-11-10."), _user("Ben", "Who books?")])
    second = _summary([_user("Ann", "Update: the deadline is 2026-11-20.")], previous_summary=first)
    assert "2026-11-20" in second
    assert "2026-11-10" not in second


def test_previous_latest_ask_becomes_an_earlier_ask() -> None:
    first = _summary([_user("Ann", "Please book the room for Monday.")])
    second = _summary(CHAT, previous_summary=first)
    assert "Earlier ask: [Ann] asked: Please book the room for Monday." in second
    assert second.count("asked:") == 2


def test_pins_are_verbatim_and_never_dropped() -> None:
    pins = ("Office closes at 18:00 sharp — no exceptions", "Escalate to #ops-oncall")
    text = _summary(_huge_chat(2_500), pins=pins)
    section = _section(text, "## Pinned facts")
    assert all(f"- {pin}" in section for pin in pins)
    assert len(text) <= MAX_SUMMARY_CHARS


def test_same_input_gives_the_same_output() -> None:
    assert _summary(_huge_chat(200)) == _summary(_huge_chat(200))


def test_secrets_are_redacted() -> None:
    turns = [_user("Bob", f"Our OpenAI key is {KEY}, password=hunter22 ok")]
    previous = f"## Key facts and exact values\n- Old key {KEY}"
    text = _summary(turns, previous_summary=previous)
    assert KEY not in text and "hunter22" not in text
    assert "[REDACTED]" in text


def test_uses_the_template_headings_in_order() -> None:
    text = _summary(pins=("p1",))
    found = [h for h in SECTION_HEADINGS if h in text]
    assert found == sorted(found, key=text.index)
    assert "## Pinned facts" in found


def test_participants_stay_one_line_across_compactions() -> None:
    import datetime as _dt

    from compactbot.compression.deterministic import deterministic_summary as summarize
    from compactbot.compression.summarizer import SummaryRequest as Request

    def request(turns: list[dict], previous: str | None) -> Request:
        return Request(
            turns=turns,
            previous_summary=previous,
            focus_topic=None,
            budget_tokens=2000,
            today=_dt.date(2026, 11, 30),
        )

    first = summarize(
        request([{"role": "user", "content": "[Alice] hello there"}], None), unavailable=False
    )
    second = summarize(
        request([{"role": "user", "content": "[Bob] we decided to use postgres"}], first),
        unavailable=False,
    )
    seen = [line for line in second.splitlines() if "Seen in these turns" in line]
    assert len(seen) == 1
    assert "Alice" in seen[0] and "Bob" in seen[0]

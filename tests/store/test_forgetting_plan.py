"""The backend-free plan of a forgetting: which entries go, which lines go, what comes back."""

from __future__ import annotations

from compactbot.bot.store.forgetting import TargetRow, TextRow, needles_of, plan, scrub_memory
from compactbot.compression.memory import Memory, MemoryEntry

SECRET = "[dave] the safe code is 90210"


def test_a_value_that_replaced_a_forgotten_one_gives_way_to_the_older_value() -> None:
    memory = Memory(
        (
            MemoryEntry(1, "fact", "deploy day is Monday", subject="deploy day", sources=("1",),
                        status="superseded", superseded_by=2),
            MemoryEntry(2, "fact", "deploy day is Friday", subject="deploy day", sources=("2",)),
        )
    )  # fmt: skip

    kept, dropped = scrub_memory(memory, {"2"}, ["[dave] deploy on Friday"], [])

    assert [e.id for e in dropped] == [2]
    assert [(e.id, e.status, e.superseded_by) for e in kept.entries] == [(1, "current", None)]


def test_an_unattributed_entry_sharing_the_forgotten_texts_rarest_words_is_dropped() -> None:
    memory = Memory(
        (
            MemoryEntry(1, "fact", "Dave's safe combination: 90210 (garage)"),
            MemoryEntry(2, "fact", "the garage door is blue", sources=("7",)),
        )
    )
    texts = ["[dave] my safe combination is 90210, in the garage"]

    kept, _ = scrub_memory(memory, {"5"}, texts, needles_of(texts))

    assert [e.id for e in kept.entries] == [2]


def test_quoting_lines_leave_summaries_replies_and_tool_results_and_the_totals_follow() -> None:
    rows = [
        TextRow(10, 1, True, 30, "Summary\n- [dave] the safe code is 90210\n- other", "text"),
        TextRow(11, 1, False, 10, '[{"type": "text", "text": "the safe code is 90210"}]', "json"),
        TextRow(12, 1, True, 5, "unrelated reply", "text"),
    ]

    changes = plan(
        [TargetRow(3, 1, True, 8, SECRET)], {1: Memory()}, rows, {1: "the safe code is 90210"}
    )

    assert changes.deleted == [3]
    assert [r.id for r in changes.rewrites] == [10, 11]
    assert all("90210" not in r.content for r in changes.rewrites)
    assert changes.previous_summaries == {1: None}
    tokens, messages = changes.totals[1]
    assert messages == 1 and tokens > 8  # the row itself, and what its rewrite saved
    assert changes.sessions == {1}


def test_a_short_text_is_no_evidence_of_a_quote() -> None:
    assert needles_of(["[dave] ok", "hi"]) == []

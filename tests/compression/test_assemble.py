from __future__ import annotations

import copy

from compactbot.compression.assemble import (
    COMPACTION_NOTE,
    STRIPPED_IMAGE_TEXT,
    assemble,
    assembled,
    drop_unpaired_tool_messages,
    strip_historical_media,
    summary_placement,
    with_compaction_note,
)
from compactbot.compression.template import SUMMARY_END_MARKER, SUMMARY_PREFIX, is_summary_text
from tests.compression.scripted import assistant, image_user, system, tool_round, user


def test_compaction_note_added_once_to_string_prompt() -> None:
    once = with_compaction_note(system("Be nice."))
    twice = with_compaction_note(once)
    assert once == twice
    assert once["content"].startswith("Be nice.") and once["content"].endswith(COMPACTION_NOTE)


def test_compaction_note_added_once_to_list_prompt() -> None:
    prompt = {"role": "system", "content": [{"type": "text", "text": "Be nice."}]}
    once = with_compaction_note(prompt)
    assert with_compaction_note(once) == once
    assert once["content"][-1] == {"type": "text", "text": COMPACTION_NOTE}
    assert prompt["content"] == [{"type": "text", "text": "Be nice."}]


def test_summary_is_user_when_only_system_prompt_is_kept() -> None:
    assert summary_placement([system()], [assistant("hi")]) == ("user", False)


def test_summary_avoids_same_role_neighbours() -> None:
    assert summary_placement([system(), user("A", "x")], [user("B", "y")]) == ("assistant", False)
    assert summary_placement([system(), user("A", "x"), assistant("z")], [assistant("w")]) == (
        "user",
        False,
    )


def test_double_collision_merges_into_first_tail_message() -> None:
    head = [system(), user("A", "x"), assistant("z")]
    assert summary_placement(head, [user("B", "y")]) == ("user", True)


def test_merged_message_keeps_its_text_first_and_end_marker_last() -> None:
    out = assemble([system(), user("A", "x"), assistant("z")], "BODY", [user("B", "y")])
    merged = out[-1]["content"]
    assert merged.startswith("[B] y")
    assert merged.index("[B] y") < merged.index(SUMMARY_PREFIX) < merged.index("BODY")
    assert merged.endswith(SUMMARY_END_MARKER)
    assert is_summary_text(merged)


def test_merge_into_list_content_stays_recognisable() -> None:
    head = [system(), user("A", "x"), assistant("z")]
    out = assemble(head, "BODY", [image_user("B", "look")])
    parts = out[-1]["content"]
    assert parts[1]["type"] == "image_url"
    assert parts[-1]["text"].endswith(SUMMARY_END_MARKER)


def test_standalone_summary_ends_with_end_marker() -> None:
    out = assemble([system()], "BODY", [assistant("hi"), user("A", "q")])
    assert out[1]["role"] == "user"
    assert out[1]["content"].startswith(SUMMARY_PREFIX)
    assert out[1]["content"].endswith(SUMMARY_END_MARKER)


def test_orphan_tool_results_are_dropped() -> None:
    round_ = tool_round(["a"])
    out = drop_unpaired_tool_messages([user("A", "x"), round_[1], assistant("y")])
    assert [m["role"] for m in out] == ["user", "assistant"]


def test_duplicate_results_for_one_call_keep_the_first() -> None:
    round_ = tool_round(["a"])
    out = drop_unpaired_tool_messages([*round_, dict(round_[1], content="again")])
    assert [m.get("content") for m in out[1:]] == ["output of a"]


def test_image_parts_before_newest_image_user_are_replaced() -> None:
    messages = [image_user("A", "old"), assistant("nice"), image_user("B", "new"), user("C", "t")]
    out = strip_historical_media(messages)
    assert out[0]["content"][1] == {"type": "text", "text": STRIPPED_IMAGE_TEXT}
    assert out[2] == messages[2]
    assert messages[0]["content"][1]["type"] == "image_url"


def test_assemble_never_mutates_its_input() -> None:
    head = [system(), user("A", "x"), assistant("z")]
    tail = [user("B", "y"), *tool_round(["q"])]
    before = copy.deepcopy((head, tail))
    assemble(head, "BODY", tail)
    assert (head, tail) == before


def test_each_message_names_the_kept_message_it_copies_unchanged() -> None:
    """`sources` is what tokens_after is summed from: a copy named by it must equal its source,
    and every message assemble changed (noted prompt, merged summary, stubbed images, calls
    without a result) must be counted afresh (-1)."""
    orphan_call = tool_round(["c1", "c2"])[:2]  # c2's result is missing: the call is cut down
    cases = [
        ([system(), user("A", "x")], [assistant("y"), user("B", "z")]),
        ([system()], [assistant("hi"), user("A", "q")]),  # summary merged into the tail
        ([system(), user("A", "x"), assistant("z")], [user("B", "y")]),
        (
            [system(), user("A", "x")],
            [assistant("ok"), image_user("A", "old"), image_user("B", "new")],
        ),
        ([system()], [user("A", "go"), *orphan_call, assistant("done")]),
        ([system()], [*tool_round(["c9"])[1:], user("A", "orphan result dropped")]),
    ]
    for head, tail in cases:
        known = [*head, *tail]
        out = assembled(head, "BODY", tail)
        assert out.messages == assemble(head, "BODY", tail)
        assert len(out.sources) == len(out.messages)
        for message, source in zip(out.messages, out.sources, strict=True):
            if source >= 0:
                assert message == known[source] and message is not known[source]
        changed = [m for m, s in zip(out.messages, out.sources, strict=True) if s < 0]
        assert all(m not in known for m in changed), changed
        assert out.sources.count(-1) >= 2  # the noted prompt and the summary, at least

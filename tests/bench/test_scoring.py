"""The bench's scoring: probes, the truncation baseline, GateMem matching and the tallies.
A bench that cannot fail is broken, so each helper is shown to say "no" as well as "yes"."""

from __future__ import annotations

from bench.episodes import holds
from bench.planted_items import Planted
from bench.probes import Context, in_context, via_recall
from bench.retention_report import share
from bench.rounds import RoundsRun
from bench.truncation import newest_that_fit
from compactbot.compression import Memory, MemoryEntry


def _item(kind: str = "preference", value: str = "Velkaro", speaker: str = "Priya") -> Planted:
    return Planted("r/x", kind, 0, 3, speaker, f"I prefer {value} for dinner", value, ("dinner",),
                   chinese=False, labelled=False)  # fmt: skip


def test_a_preference_counts_only_with_its_member_on_the_same_line() -> None:
    item = _item()
    shown = Context.of([{"role": "user", "content": "## Preferences\n- [Priya]  I prefer VELKARO"}])
    assert in_context(item, shown)
    apart = Context.of([{"role": "user", "content": "Priya said things\n- I prefer velkaro"}])
    assert not in_context(item, apart)
    assert in_context(_item("fact"), apart)
    assert not in_context(item, Context.of([{"role": "user", "content": "nothing here"}]))


def test_recall_finds_a_value_by_the_words_a_member_asks_with() -> None:
    entry = MemoryEntry(1, "preference", "I prefer Velkaro for dinner", speaker="Priya")
    assert via_recall(_item(), Memory((entry,)))
    other = MemoryEntry(1, "preference", "I prefer Velkaro for lunch", speaker="Priya")
    assert not via_recall(_item(), Memory((other,)))
    assert not via_recall(_item(), Memory())


def test_truncation_keeps_the_newest_messages_that_fit_starting_at_a_user_message() -> None:
    messages = [{"role": "system"}, {"role": "user"}, {"role": "assistant"}, {"role": "user"},
                {"role": "assistant"}, {"role": "user"}]  # fmt: skip
    counts = [5, 10, 10, 10, 10, 10]
    assert newest_that_fit(messages, counts, 5 + 30) == 3
    # 5 + 20 fits the last two, but a kept part may not start with the assistant's reply.
    assert newest_that_fit(messages, counts, 5 + 20) == 1
    # Over budget, the newest user message is kept whole.
    assert newest_that_fit(messages, counts, 1) == 1


def test_gatemem_matching_normalises_case_and_spacing_and_ignores_the_question() -> None:
    request = [{"role": "user", "content": "[Mia] The stipend is now  2,350\nUSD a month."}]
    assert holds(request, ["2,350 usd", "STIPEND"], question="")
    assert not holds(request, ["2,350 USD", "May 12"], question="")
    asked = [*request, {"role": "user", "content": "Is it still due on May 12?"}]
    assert not holds(asked, ["May 12"], question="Is it still due on May 12?")


def test_share_counts_each_k_and_leaves_runs_without_memory_out_of_recall() -> None:
    run = RoundsRun("s", "room", 8_192, kinds={"a": "rule", "b": "fact"})
    run.seen = {("a", 1): (True, True), ("b", 1): (False, True), ("a", 2): (False, False),
                ("b", 2): (False, None)}  # fmt: skip
    assert share([run], 1) == (0.5, 2)
    assert share([run], 1, recall=True) == (1.0, 2)
    assert share([run], 2, ["rule"]) == (0.0, 1)
    assert share([run], None) == (0.0, 2)  # each item's last round
    assert share([run], 2, ["fact"], recall=True)[1] == 0

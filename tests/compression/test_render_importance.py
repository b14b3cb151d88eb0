"""Issue 37: the memory is rendered by importance, with a guarantee (SPEC 6.11)."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from compactbot.compression import SUMMARY_PREFIX, CompressorConfig, ContextCompressor
from compactbot.compression.memory import (
    ENTRY_KINDS,
    EntryKind,
    EntryStatus,
    Memory,
    MemoryEntry,
    MemoryUpdate,
    apply_update,
)
from compactbot.compression.memory_render import (
    MUST_SHOW_TIERS,
    must_show_tokens,
    ordered_items,
    render_memory,
)
from compactbot.compression.tokens import TokenCounter
from tests.compression.labelled_session import PREFERENCES, RULES, chatter, labelled_session
from tests.compression.scripted import (
    FILLER,
    FakeClock,
    PerfectSummarizer,
    assistant,
    group_chat,
    request_text,
    system,
    user,
)

SMALL = CompressorConfig(context_length=8_000, protect_first_n=1, protect_last_n=4)


@pytest.mark.parametrize("window", [16_000, 8_000])
@pytest.mark.parametrize("said_between_rounds", [0, 6])
async def test_labelled_session_keeps_every_rule_and_preference_through_five_forced_rounds(
    window: int, said_between_rounds: int
) -> None:
    compressor = ContextCompressor(CompressorConfig(context_length=window), clock=FakeClock())
    transcript = labelled_session()
    compacted = 0
    for round_ in range(5):
        # Each round compacts the previous round's output (and what was said since).
        result = await compressor.compress(transcript, force=True)
        assert result.outcome in ("compressed", "noop"), (round_, result.error)
        compacted += result.outcome == "compressed"
        assert result.must_show_hidden == 0
        context = "\n".join(str(m.get("content")) for m in result.messages)
        for item in (*RULES, *PREFERENCES):
            assert item in context, (window, round_, item)
        transcript = [*result.messages, *chatter(1_000 + 40 * round_, said_between_rounds)]
    assert compacted >= 4


def _random_memory(rng: random.Random) -> Memory:
    kinds: tuple[EntryKind, ...] = ENTRY_KINDS
    entries = []
    for i in range(1, rng.randint(1, 60)):
        kind = rng.choice(kinds)
        status: EntryStatus = "current"
        if kind in ("action", "question") and rng.random() < 0.4:
            status = "done" if kind == "action" else "resolved"
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(2, 30)))
        entries.append(MemoryEntry(i, kind, f"{kind} {i}: {words}", speaker="Ann", status=status))
    return Memory(tuple(entries))


_WORDS = ("budget", "deploy", "€800", "Thursday", "never", "部署", "vault", "ok", "PELICAN")


@pytest.mark.parametrize("seed", range(40))
def test_a_lower_kind_is_never_shown_while_an_entry_of_a_higher_kind_is_hidden(seed: int) -> None:
    rng = random.Random(seed)
    memory = _random_memory(rng)
    counter = TokenCounter(None)
    for budget in (0, 60, 150, 400, 900, 4_000):
        max_chars = rng.choice((None, 1_500))
        rendered = render_memory(
            memory, budget_tokens=budget, count_tokens=counter.count_text, max_chars=max_chars
        )
        lines = rendered.body.splitlines()
        items = ordered_items(memory)
        shown = [item for item in items if item.line in lines]
        hidden = [item for item in items if item.line not in lines]
        assert (len(shown), len(hidden)) == (rendered.shown, rendered.hidden)
        if shown and hidden:
            assert max(item.tier for item in shown) <= min(item.tier for item in hidden)
        assert rendered.must_show_hidden == sum(i.tier < MUST_SHOW_TIERS for i in hidden)
        # Newest first within a kind (a tier's section).
        for tier, heading in {(item.tier, item.heading) for item in shown}:
            same = [i for i in shown if (i.tier, i.heading) == (tier, heading)]
            by_place = sorted(same, key=lambda i: lines.index(i.line))
            assert [i.entry.id for i in by_place] == sorted(
                (i.entry.id for i in same), reverse=True
            )
        if max_chars is not None:
            assert len(rendered.body) <= max_chars
        elif budget >= 150:
            assert counter.count_text(rendered.body) <= budget


def test_the_must_show_kinds_get_the_room_they_need_up_to_the_cap() -> None:
    counter = TokenCounter(None)
    rules = [
        MemoryEntry(i, "rule", f"Never do thing number {i} without asking Grace")
        for i in range(1, 300)
    ]
    facts = [MemoryEntry(100 + i, "fact", f"The code of room {i} is RC-{i:04d}") for i in range(50)]
    memory = Memory((*rules, *facts))
    config = CompressorConfig(context_length=64_000)
    need = must_show_tokens(memory, count_tokens=counter.count_text)
    assert need > config.summary_budget(10_000)  # more than a span-sized summary would get
    budget = config.render_budget(10_000, need)
    rendered = render_memory(memory, budget_tokens=budget, count_tokens=counter.count_text)
    assert rendered.must_show_hidden == 0 and all(r.text in rendered.body for r in rules)
    # Past the cap they are still first, and the result says how many are left out.
    small = CompressorConfig(context_length=16_000, memory_cap_ratio=0.05)
    capped = render_memory(
        memory, budget_tokens=small.render_budget(10_000, need), count_tokens=counter.count_text
    )
    assert capped.must_show_hidden > 0 and "RC-" not in capped.body


def test_identical_entries_are_one_entry_with_all_their_sources() -> None:
    said = MemoryEntry(
        0, "fact", "Note: the linter config lives in pyproject.toml", sources=("m4",)
    )
    again = replace(said, text="note: the linter config lives in  pyproject.toml", sources=("m9",))
    memory = apply_update(Memory(), MemoryUpdate((said,)))
    memory = apply_update(memory, MemoryUpdate((again, replace(said, sources=("m4",)))))
    assert [(e.text, e.sources) for e in memory.entries] == [(said.text, ("m4", "m9"))]
    # The same words stored under two kinds are rendered once, with every source.
    noted = MemoryEntry(5, "narrative", said.text, sources=("m12",))
    both = Memory((*memory.entries, noted))
    rendered = render_memory(both, budget_tokens=2_000, count_tokens=TokenCounter(None).count_text)
    assert rendered.body.count("linter config") == 1
    (item,) = ordered_items(both)
    assert item.entry.kind == "fact" and set(item.entry.sources) == {"m4", "m9", "m12"}


async def test_a_reused_compressor_starts_empty_on_another_transcript() -> None:
    summarizer = PerfectSummarizer()
    compressor = ContextCompressor(SMALL, summarizer, clock=FakeClock())
    first = [
        system(),
        *group_chat(1),
        user("Ann", "FACT-1: the venue is Hall Alphaville."),
        *group_chat(40, start=2),
    ]
    done = await compressor.compress(first, force=True)
    assert done.outcome == "compressed" and "Alphaville" in (done.summary or "")
    # The same compressor, handed a transcript that carries none of its summaries.
    summarizer.requests.clear()
    other = [system(), *group_chat(40, start=500)]
    result = await compressor.compress(other, force=True)
    assert result.outcome == "compressed" and summarizer.requests
    for request in summarizer.requests:
        assert "Alphaville" not in request_text(request) + (request.memory or "")
    assert "Alphaville" not in (result.summary or "")
    assert result.memory is not None and "Alphaville" not in str(result.memory)
    # Offline too: the extractor's summary of the other transcript holds nothing of the first.
    offline = ContextCompressor(SMALL, clock=FakeClock())
    await offline.compress(first, force=True)
    again = await offline.compress(other, force=True)
    assert "Alphaville" not in (again.summary or "") and "Alphaville" not in str(again.memory)


async def test_its_own_output_keeps_the_memory() -> None:
    compressor = ContextCompressor(SMALL, clock=FakeClock())
    first = [system(), *group_chat(1), user("Ann", "RULE: never share the vault code.")]
    first += group_chat(40, start=2)
    done = await compressor.compress(first, force=True)
    later = await compressor.compress([*done.messages, *group_chat(30, start=90)], force=True)
    assert later.outcome == "compressed" and "never share the vault code" in (later.summary or "")
    assert done.memory is not None and later.memory is not None
    ids = {(e.id, e.text) for e in done.memory.entries}
    assert ids <= {(e.id, e.text) for e in later.memory.entries}  # carried, not re-read


async def test_must_show_entries_are_never_shed_to_make_a_compaction_save() -> None:
    rules = tuple(
        MemoryEntry(i, "rule", f"RULE {i}: never move crate {i} without a signed form from Grace.")
        for i in range(1, 60)
    )
    facts = tuple(MemoryEntry(100 + i, "fact", f"Room {i} code is RC-{i:04d}.") for i in range(60))
    memory = Memory((*rules, *facts))
    transcript = [system(), *group_chat(20, filler=1)]
    compressor = ContextCompressor(SMALL, clock=FakeClock())
    result = await compressor.compress(transcript, force=True, memory=memory)
    # Showing every rule costs more than the few turns it would replace: nothing changes.
    assert result.outcome == "noop" and result.error == "summary not smaller"
    assert result.messages == transcript
    # With more to replace, facts are shed to save and the rules all stay.
    longer = [system(), *group_chat(30, filler=2)]
    saved = await compressor.compress(longer, force=True, memory=memory)
    assert saved.outcome == "compressed" and saved.tokens_after < saved.tokens_before
    assert saved.summary is not None and all(rule.text in saved.summary for rule in rules)
    assert 0 < saved.summary.count("RC-") < len(facts)


async def test_the_extractors_summary_outgrows_its_8000_characters_only_for_must_show_entries():
    rules = tuple(
        MemoryEntry(i, "rule", f"RULE {i}: never move crate {i} without a signed form from Grace.")
        for i in range(1, 200)
    )
    facts = tuple(MemoryEntry(300 + i, "fact", f"Room {i} code is RC-{i:04d}.") for i in range(60))
    compressor = ContextCompressor(CompressorConfig(context_length=128_000), clock=FakeClock())
    transcript = [system(), *group_chat(300, filler=2)]
    result = await compressor.compress(transcript, force=True, memory=Memory((*rules, *facts)))
    assert result.outcome == "compressed" and result.summary is not None
    # Every rule is shown, past SPEC 6.9's 8,000 characters and within the 10 % cap.
    assert all(rule.text in result.summary for rule in rules)
    assert len(result.summary) > 8_000 and result.must_show_hidden == 0
    # Without the rules' need, the 8,000 characters hold.
    few = await ContextCompressor(
        CompressorConfig(context_length=128_000), clock=FakeClock()
    ).compress(transcript, force=True, memory=Memory((*rules[:3], *facts)))
    assert few.summary is not None and len(few.summary) <= 8_000 + 1_000  # prefix and marker


async def test_its_own_summary_merged_into_a_tail_message_keeps_the_memory() -> None:
    compressor = ContextCompressor(SMALL, clock=FakeClock())
    first = [system(), user("Ann", "RULE: never share the vault code.")]
    for i in range(40):
        first += [assistant(f"reply {i} " + FILLER), user("Ben", f"msg {i} " + FILLER)]
    first.append(assistant("final answer"))
    done = await compressor.compress(first, force=True)
    # User head, assistant tail: the summary rides inside the first tail message.
    merged = done.messages[2]
    assert merged["role"] == "assistant" and SUMMARY_PREFIX in str(merged["content"])
    later = await compressor.compress(
        [*done.messages, user("Cy", "FACT-9: the bus leaves at 07:40")]
    )
    assert done.memory is not None and later.memory is not None
    carried = {(e.id, e.text) for e in later.memory.entries}
    assert {(e.id, e.text) for e in done.memory.entries} <= carried  # carried, not re-read


def test_the_memory_cap_defaults_to_a_tenth_of_the_window_with_the_summary_floor() -> None:
    assert CompressorConfig(context_length=200_000).memory_cap_tokens == 20_000
    assert CompressorConfig(context_length=8_000).memory_cap_tokens == 2_000
    assert (
        CompressorConfig(context_length=200_000, memory_cap_ratio=0.2).memory_cap_tokens == 40_000
    )
    for bad in (0.0, -0.1, 1.5):
        with pytest.raises(ValueError, match="memory_cap_ratio"):
            CompressorConfig(context_length=8_000, memory_cap_ratio=bad)

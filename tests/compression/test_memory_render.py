"""render_memory() tries byte lengths before the tokenizer: the same summary either way."""

from __future__ import annotations

from compactbot.compression.memory import EntryKind, Memory, MemoryEntry
from compactbot.compression.memory_render import _rendered, ordered_items, render_memory, utf8_bytes
from compactbot.compression.tokens import TokenCounter

TEXTS = [
    "The deploy day is Thursday.",
    "Бюджет на квартал — 40 000 ₽, решили на планёрке.",
    "部署日期改到星期四，预算是四万元。",
    "🎉🎉 launch party at 18:00 in room 4B 🎉",
    "Ann prefers the release notes in German, ohne Anglizismen.",
    "The API base is https://api.example.test/v2/ and the timeout is 30 s.",
]


def _memory() -> Memory:
    kinds: tuple[EntryKind, ...] = ("fact", "decision", "rule", "preference", "fact", "fact")
    entries = [MemoryEntry(1, "participant", "Ann"), MemoryEntry(2, "participant", "Бо")]
    entries += [
        MemoryEntry(i + 3, kind, text, speaker="Ann")
        for i, (kind, text) in enumerate(zip(kinds, TEXTS, strict=True))
    ]
    return Memory(tuple(entries))


def test_a_token_count_never_exceeds_the_texts_utf8_bytes() -> None:
    counter = TokenCounter(None)
    for text in [*TEXTS, "a" * 500, " \n\t" * 40, "\u00e9" * 99, "x\ud800y"]:
        assert counter.count_text(text) <= utf8_bytes(text)


def test_a_roomy_budget_renders_what_exact_counts_render_without_counting() -> None:
    counted: list[str] = []
    counter = TokenCounter(None)

    def count(text: str) -> int:
        counted.append(text)
        return counter.count_text(text)

    rendered = render_memory(_memory(), budget_tokens=2_000, count_tokens=count)
    assert counted == []
    assert rendered == _rendered(
        ordered_items(_memory()), 2_000, counter.count_text, False, None, ()
    )
    assert rendered.hidden == 0 and rendered.shown == 1 + len(TEXTS)


def test_a_tight_budget_is_decided_by_exact_counts() -> None:
    counter = TokenCounter(None)
    full = render_memory(_memory(), budget_tokens=2_000, count_tokens=counter.count_text)
    exact = counter.count_text(full.body)
    for budget in range(exact - 60, exact + 40, 5):
        rendered = render_memory(_memory(), budget_tokens=budget, count_tokens=counter.count_text)
        assert rendered == _rendered(
            ordered_items(_memory()), budget, counter.count_text, False, None, ()
        )
    # Somewhere in that range, byte lengths alone would have hidden an entry that fits.
    assert any(
        _rendered(ordered_items(_memory()), b, utf8_bytes, False, None, ()).hidden
        > _rendered(ordered_items(_memory()), b, counter.count_text, False, None, ()).hidden
        for b in range(exact - 60, exact + 40, 5)
    )

"""Dead letters: an update kept once per id, truncated to its limits, listed newest first."""

from __future__ import annotations

from compactbot.bot.store.backends import Store
from compactbot.bot.store.protocols.dead_letters import MAX_ERROR_CHARS, MAX_PAYLOAD_CHARS
from tests.store.conftest import ManualClock


async def test_an_update_is_recorded_once_and_listed_newest_first(
    store: Store, clock: ManualClock
) -> None:
    assert await store.record_dead_letter("telegram", "41", "unparseable", '{"a": 1}')
    clock.advance(5)
    assert await store.record_dead_letter("telegram", "42", "failed: disk", "{}")
    # A redelivery of a dead-lettered update keeps the first record.
    assert not await store.record_dead_letter("telegram", "41", "again", "{}")
    # The same id on another platform is another update.
    assert await store.record_dead_letter("discord", "41", "unparseable", "{}")
    letters = await store.list_dead_letters()
    assert [(d.platform, d.update_id, d.error) for d in letters] == [
        ("discord", "41", "unparseable"),
        ("telegram", "42", "failed: disk"),
        ("telegram", "41", "unparseable"),
    ]
    assert letters[1].received_at == clock.now and letters[2].received_at == clock.now - 5
    assert letters[2].payload == '{"a": 1}'
    assert [d.update_id for d in await store.list_dead_letters(limit=1)] == ["41"]


async def test_long_errors_and_payloads_are_cut_to_their_limits(store: Store) -> None:
    assert await store.record_dead_letter("telegram", "7", "e" * 10_000, "p" * 100_000)
    [letter] = await store.list_dead_letters()
    assert (len(letter.error), len(letter.payload)) == (MAX_ERROR_CHARS, MAX_PAYLOAD_CHARS)

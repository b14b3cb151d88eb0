"""Send slots shared by the workers (PostgreSQL): consecutive per name, whoever takes them."""

from __future__ import annotations

from compactbot.bot.store import PostgresStore
from tests.store.conftest import ManualClock


async def test_workers_take_consecutive_slots_of_a_name(
    pg: PostgresStore, second: PostgresStore, clock: ManualClock
) -> None:
    one, two = pg.pacing(), second.pacing()
    now = clock()
    assert await one.slot("telegram:-5", 3.0, now) == now
    assert await two.slot("telegram:-5", 3.0, now) == now + 3.0
    assert await one.slot("telegram:-5", 3.0, now) == now + 6.0
    assert await two.slot("telegram:-6", 3.0, now) == now  # another chat: its own slots
    clock.advance(60)
    later = clock()
    assert await two.slot("telegram:-5", 3.0, later) == later  # long idle: no debt carried


async def test_a_slot_is_never_before_what_the_caller_asks(pg: PostgresStore) -> None:
    pacing = pg.pacing()
    assert await pacing.slot("telegram", 0.5, 100.0) == 100.0
    assert await pacing.slot("telegram", 0.5, 10.0) == 100.5
    assert await pacing.slot("telegram", 0.5, 200.0) == 200.0


async def test_a_burst_goes_at_once_then_one_an_interval(pg: PostgresStore) -> None:
    pacing = pg.pacing()
    slots = [await pacing.slot("telegram:-5", 1.0, 0.0, burst=3) for _ in range(5)]
    assert slots == [0.0, 0.0, 0.0, 1.0, 2.0]


async def test_old_slots_are_pruned_with_the_queue(pg: PostgresStore, clock: ManualClock) -> None:
    pacing = pg.pacing()
    await pacing.slot("telegram:-5", 3.0, clock())
    clock.advance(100)
    await pg.inbox().prune(keep_seconds=50)
    assert await pg.pacing().slot("telegram:-5", 3.0, 0.0) == 0.0  # the row was gone

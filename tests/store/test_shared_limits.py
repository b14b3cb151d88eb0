"""Shared limits in the store: rate windows, notice windows and the admin cache (SPEC 15).

Every case runs on both backends; the second store on the same database is what another worker
would open, so a limit it sees is one limit for all workers.
"""

from __future__ import annotations

import asyncio

from compactbot.bot.store.backends import Store
from compactbot.bot.store.protocols.shared_limits import (
    LIMITS_PRUNE_INTERVAL_SECONDS,
    RATE_WINDOW_SECONDS,
)
from tests.store.conftest import ManualClock, SameStore

MEMBER = '["test:g1","bob"]'


async def test_rate_window_allows_per_minute_hits_then_refuses_until_the_first_ages_out(
    store: Store, clock: ManualClock
) -> None:
    hits = []
    for _ in range(4):
        hits.append(await store.rate_hit(MEMBER, 3, clock.now))
        clock.advance(10)
    assert hits == [True, True, True, False]

    clock.now += RATE_WINDOW_SECONDS - 40  # the first hit is now exactly a minute old
    assert await store.rate_hit(MEMBER, 3, clock.now)
    assert not await store.rate_hit(MEMBER, 3, clock.now)
    assert await store.rate_hit('["test:g1","carol"]', 3, clock.now)  # per key


async def test_a_refused_attempt_does_not_count_against_the_window(
    store: Store, clock: ManualClock
) -> None:
    assert await store.rate_hit(MEMBER, 1, clock.now)
    for _ in range(5):
        clock.advance(10)
        assert not await store.rate_hit(MEMBER, 1, clock.now)
    clock.advance(10)  # a minute after the only counted hit
    assert await store.rate_hit(MEMBER, 1, clock.now)


async def test_zero_per_minute_is_unlimited(store: Store, clock: ManualClock) -> None:
    assert all([await store.rate_hit(MEMBER, 0, clock.now) for _ in range(50)])


async def test_two_workers_on_one_database_share_one_rate_limit(
    store: Store, open_same_store: SameStore, clock: ManualClock
) -> None:
    async with open_same_store(store) as other:
        results = [await s.rate_hit(MEMBER, 3, clock.now) for s in (store, other) * 3]
    assert results.count(True) == 3


async def test_racing_rate_hits_on_one_key_pass_exactly_the_limit(
    store: Store, open_same_store: SameStore, clock: ManualClock
) -> None:
    async with open_same_store(store) as other:
        results = await asyncio.gather(
            *(s.rate_hit(MEMBER, 5, clock.now) for s in (store, other) * 10)
        )
    assert results.count(True) == 5


async def test_notice_is_said_once_per_interval_per_scope_and_key(
    store: Store, clock: ManualClock
) -> None:
    assert await store.notice_first("rate", "a", 60.0, clock.now)
    assert not await store.notice_first("rate", "a", 60.0, clock.now)
    assert await store.notice_first("rate", "b", 60.0, clock.now)
    assert await store.notice_first("budget", "a", 60.0, clock.now)
    clock.advance(59.5)
    assert not await store.notice_first("rate", "a", 60.0, clock.now)
    clock.advance(0.5)
    assert await store.notice_first("rate", "a", 60.0, clock.now)


async def test_notice_reset_forgets_its_scope_only(store: Store, clock: ManualClock) -> None:
    for scope in ("failure:g1", "failure:g2"):
        assert await store.notice_first(scope, "kind", 600.0, clock.now)
    await store.notice_reset("failure:g1")
    await store.notice_reset("never-told")
    assert await store.notice_first("failure:g1", "kind", 600.0, clock.now)
    assert not await store.notice_first("failure:g2", "kind", 600.0, clock.now)


async def test_racing_notices_are_said_once_across_workers(
    store: Store, open_same_store: SameStore, clock: ManualClock
) -> None:
    async with open_same_store(store) as other:
        results = await asyncio.gather(
            *(s.notice_first("rate", "a", 60.0, clock.now) for s in (store, other) * 10)
        )
    assert results.count(True) == 1


async def test_admin_cache_answers_until_it_expires_on_every_worker(
    store: Store, open_same_store: SameStore, clock: ManualClock
) -> None:
    key = '["telegram","-100","7"]'
    assert await store.cached_admin(key, clock.now) is None
    await store.cache_admin(key, True, clock.now + 300)
    async with open_same_store(store) as other:
        assert await other.cached_admin(key, clock.now) is True
        await other.cache_admin(key, False, clock.now + 300)  # demoted, seen by the other
    assert await store.cached_admin(key, clock.now + 299) is False
    assert await store.cached_admin(key, clock.now + 300) is None


async def test_expired_rows_are_pruned_and_live_ones_kept(store: Store, clock: ManualClock) -> None:
    # The first write of a process prunes; these rows are written after it.
    assert await store.rate_hit("old", 1, clock.now)
    assert await store.notice_first("rate", "old", 60.0, clock.now)
    await store.cache_admin("old", True, clock.now + 60)
    clock.advance(LIMITS_PRUNE_INTERVAL_SECONDS)
    assert await store.rate_hit("fresh", 1, clock.now)  # prunes first

    assert await store.cached_admin("old", clock.now - LIMITS_PRUNE_INTERVAL_SECONDS) is None
    assert not await store.rate_hit("fresh", 1, clock.now)  # live rows survive a prune


async def test_day_spend_counts_threads_toward_their_parent_and_members_within_it(
    store: Store,
) -> None:
    await store.upsert_chat("test:g1", "test")
    await store.upsert_chat("test:g1:topic7", "test", parent_key="test:g1")
    await store.upsert_chat("test:other", "test")
    await store.add_usage("test:g1", "bob", "reply", 100, 10, day="2026-11-01")
    await store.add_usage("test:g1:topic7", "bob", "reply", 200, 20, day="2026-11-01")
    await store.add_usage("test:g1:topic7", None, "compression", 300, 30, day="2026-11-01")
    await store.add_usage("test:other", "bob", "reply", 1_000, 0, day="2026-11-01")
    await store.add_usage("test:g1", "bob", "reply", 5_000, 0, day="2026-10-31")

    spend = await store.day_spend("test:g1", "bob", "2026-11-01", total=True)
    assert (spend.chat, spend.member, spend.total) == (660, 330, 1_660)
    alone = await store.day_spend("test:g1", None, "2026-11-01", total=False)
    assert (alone.chat, alone.member, alone.total) == (660, 0, 0)
    assert (await store.day_spend("test:none", "bob", "2026-11-01", total=False)).chat == 0

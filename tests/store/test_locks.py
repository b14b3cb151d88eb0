"""The compression lock: one holder at a time, expiry, renewal and holder-only release."""

from __future__ import annotations

import asyncio

from compactbot.bot.store.backends import Store
from tests.store.conftest import ManualClock

TTL_SECONDS = 300.0


async def test_twenty_racing_acquirers_have_exactly_one_winner(store: Store) -> None:
    session = await store.active_session("console:room")

    won = await asyncio.gather(
        *(store.acquire_lock(session.id, f"worker-{i}", TTL_SECONDS) for i in range(20))
    )

    assert won.count(True) == 1
    winner = f"worker-{won.index(True)}"
    assert await store.lock_holder(session.id) == winner


async def test_expired_lock_is_reclaimed_by_another_holder(
    store: Store, clock: ManualClock
) -> None:
    assert await store.acquire_lock(1, "crashed", TTL_SECONDS)
    assert not await store.acquire_lock(1, "next", TTL_SECONDS)

    clock.advance(TTL_SECONDS + 1)

    assert await store.lock_holder(1) is None
    assert await store.acquire_lock(1, "next", TTL_SECONDS)
    assert await store.lock_holder(1) == "next"


async def test_release_by_non_holder_fails_and_keeps_the_lock(store: Store) -> None:
    assert await store.acquire_lock(1, "owner", TTL_SECONDS)

    assert not await store.release_lock(1, "intruder")

    assert await store.lock_holder(1) == "owner"
    assert await store.release_lock(1, "owner")
    assert await store.lock_holder(1) is None


async def test_renew_extends_only_a_live_lock_of_its_holder(
    store: Store, clock: ManualClock
) -> None:
    assert await store.acquire_lock(1, "owner", TTL_SECONDS)
    clock.advance(TTL_SECONDS - 1)

    assert not await store.renew_lock(1, "intruder", TTL_SECONDS)
    assert await store.renew_lock(1, "owner", TTL_SECONDS)
    clock.advance(TTL_SECONDS - 1)
    assert await store.lock_holder(1) == "owner"

    clock.advance(2)
    assert not await store.renew_lock(1, "owner", TTL_SECONDS)


async def test_list_locks_shows_every_row_expired_or_not(store: Store, clock: ManualClock) -> None:
    assert await store.list_locks() == []
    assert await store.acquire_lock(2, "second", TTL_SECONDS)
    clock.advance(TTL_SECONDS + 1)  # the lease of "second" expires; it is still listed
    assert await store.acquire_lock(1, "first", TTL_SECONDS)
    locks = await store.list_locks()
    assert [(lock.session_id, lock.holder) for lock in locks] == [(1, "first"), (2, "second")]
    assert [lock.expires_at for lock in locks] == [clock.now + TTL_SECONDS, clock.now - 1]

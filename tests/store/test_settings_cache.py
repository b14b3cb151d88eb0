"""Chat settings are cached per store: its own writes are seen at once, another's within the TTL."""

from __future__ import annotations

from compactbot.bot.store.backends import Store
from compactbot.bot.store.settings_cache import SETTINGS_CACHE_SECONDS
from tests.store.conftest import ManualClock, SameStore


async def test_a_write_through_the_store_is_seen_at_once(store: Store) -> None:
    assert await store.get_chat_settings("console:room") == {}  # cached, empty
    await store.set_chat_setting("console:room", "threshold", "0.6")
    assert await store.get_chat_settings("console:room") == {"threshold": "0.6"}
    assert await store.unset_chat_setting("console:room", "threshold")
    assert await store.get_chat_settings("console:room") == {}


async def test_another_processs_write_is_seen_once_the_entry_expires(
    store: Store, open_same_store: SameStore, clock: ManualClock
) -> None:
    await store.set_chat_setting("console:room", "threshold", "0.4")
    assert await store.get_chat_settings("console:room") == {"threshold": "0.4"}
    async with open_same_store(store) as cli:  # the operator CLI, another process
        await cli.set_chat_setting("console:room", "threshold", "0.9")
    # Served from the cache until it expires: reading settings costs no query per message.
    assert await store.get_chat_settings("console:room") == {"threshold": "0.4"}
    clock.advance(SETTINGS_CACHE_SECONDS)
    assert await store.get_chat_settings("console:room") == {"threshold": "0.9"}


async def test_a_migrated_chat_reads_its_moved_settings_at_once(store: Store) -> None:
    await store.upsert_chat("telegram:-1", "telegram")
    await store.set_chat_setting("telegram:-1", "threshold", "0.5")
    assert await store.get_chat_settings("telegram:-1") == {"threshold": "0.5"}  # both cached
    assert await store.get_chat_settings("telegram:-100") == {}
    await store.migrate_chat("telegram:-1", "telegram:-100")
    assert await store.get_chat_settings("telegram:-100") == {"threshold": "0.5"}
    assert await store.get_chat_settings("telegram:-1") == {}

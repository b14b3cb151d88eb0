"""`ingest`: a batch of updates, each deduped, stored in one transaction, results per item."""

from __future__ import annotations

import pytest

from compactbot.bot.store.backends import Store
from compactbot.bot.store.base import IngestItem, NewMessage
from tests.store.factories import user


def item(update_id: str | None, text: str | None, *, chat: str = "test:g1") -> IngestItem:
    message = user(text) if text is not None else None
    return IngestItem("test", update_id, chat, None, message, title="G1")


async def test_batch_stores_in_order_with_a_result_per_item(store: Store) -> None:
    results = await store.ingest(
        [item("1", "a"), item("2", "b"), item("1", "a again"), item("3", None), item(None, "c")]
    )
    assert [r.duplicate for r in results] == [False, False, True, False, False]
    assert results[3].message_id is None  # a command: marked processed, nothing stored
    session = await store.active_session("test:g1")
    rows = await store.load_active(session.id)
    assert [r.content for r in rows] == ["[alice] a", "[alice] b", "[alice] c"]
    assert [r.id for r in rows] == [results[i].message_id for i in (0, 1, 4)]
    assert results[-1].session is not None
    assert results[-1].session.active_messages == 3
    assert (session.active_tokens, session.active_messages) == await store.recount(session.id)
    assert (await store.ingest([item("2", "b")]))[0].duplicate


async def test_batch_spanning_chats_keeps_each_chats_totals(store: Store) -> None:
    await store.ingest([item("1", "a"), item("2", "x", chat="test:g2"), item("3", "b")])
    for key, count in (("test:g1", 2), ("test:g2", 1)):
        session = await store.active_session(key)
        assert session.active_messages == count
        assert (session.active_tokens, count) == await store.recount(session.id)
    assert (await store.get_chat("test:g1")) is not None


async def test_failed_batch_marks_nothing_processed_and_stores_nothing(
    store: Store,
) -> None:
    bad = IngestItem("test", "2", "test:g1", None, NewMessage("user", object(), 1))
    with pytest.raises(TypeError):
        await store.ingest([item("1", "a"), bad])
    # Both updates can be delivered again and are stored then: nothing was half-written.
    results = await store.ingest([item("1", "a"), item("2", "b")])
    assert [r.duplicate for r in results] == [False, False]
    session = await store.active_session("test:g1")
    assert [r.content for r in await store.load_active(session.id)] == ["[alice] a", "[alice] b"]


async def test_ingest_says_which_rows_state_a_rule_and_an_authors_status_is_kept_later(
    store: Store,
) -> None:
    results = await store.ingest(
        [item("1", "[Ann] lunch was great"), item("2", "[Ann] Rule: nobody deploys on Fridays.")]
    )
    assert [r.states_rule for r in results] == [False, True]
    rule = results[1]
    assert rule.session is not None and rule.message_id is not None
    await store.set_author_admin(rule.message_id, True)
    [row] = await store.load_messages(rule.session.id, [rule.message_id])
    assert row.author_admin is True

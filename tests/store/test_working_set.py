"""The in-memory working set: equal to a fresh load after appends and compactions, never stale."""

from __future__ import annotations

from compactbot.bot.store.backends import Store
from compactbot.bot.turns.working_set import WorkingSet
from tests.store.conftest import SameStore
from tests.store.factories import assistant, summary, user


async def _view(ws: WorkingSet, store: Store, session_id: int) -> list:
    return list((await ws.active(await store.get_session(session_id))).rows)


async def test_working_set_equals_a_fresh_load_after_appends(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user("hi"), assistant("hello")])
    ws = WorkingSet(store)
    assert await _view(ws, store, session.id) == await store.load_active(session.id)
    for n in range(3):
        await store.append_messages(session.id, [user(f"more {n}"), assistant(f"ok {n}")])
        assert await _view(ws, store, session.id) == await store.load_active(session.id)
    assert ws.loads == 1  # appends are read as deltas, the transcript only once


async def test_working_set_equals_a_fresh_load_after_a_compaction_commit(
    store: Store,
) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user(f"m{n}") for n in range(6)])
    ws = WorkingSet(store)
    await _view(ws, store, session.id)
    commit = await store.archive_and_compact(
        await store.get_session(session.id), [summary("S"), user("m5")], ids[4]
    )
    assert commit is not None
    await store.append_messages(session.id, [user("after")])
    assert await _view(ws, store, session.id) == await store.load_active(session.id)
    assert [m.content for m in await _view(ws, store, session.id)][-2:] == [
        "[alice] m5",
        "[alice] after",
    ]


async def test_a_compaction_by_another_connection_invalidates_the_copy(
    store: Store, open_same_store: SameStore
) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user(f"m{n}") for n in range(4)])
    ws = WorkingSet(store)
    await _view(ws, store, session.id)
    # Another process (the operator CLI) compacts to the same row count behind our back.
    async with open_same_store(store) as other:
        fresh = await other.get_session(session.id)
        stale_count = fresh.active_messages
        commit = await other.archive_and_compact(
            fresh, [summary("S1"), summary("S2"), summary("S3"), user("m3")], ids[3]
        )
    assert commit is not None and commit.active_messages == stale_count
    assert [m.content for m in await _view(ws, store, session.id)] == [
        "S1",
        "S2",
        "S3",
        "[alice] m3",
    ]
    assert ws.loads == 2


async def test_a_view_does_not_change_when_rows_are_appended(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user("one")])
    ws = WorkingSet(store)
    view = await ws.active(await store.get_session(session.id))
    await store.append_messages(session.id, [user("two")])
    newer = await ws.active(await store.get_session(session.id))
    assert [m.content for m in view.rows] == ["[alice] one"]
    assert newer.length == 2 and newer.tokens() == 10 and view.tokens() == 5
    system = {"role": "system", "content": "sys"}
    one, two = ({"role": "user", "content": f"[alice] {n}"} for n in ("one", "two"))
    assert newer.request("sys", 2) == [system, one, two]
    assert view.request("sys", 1) == [system, one]  # the older view ends where it ended


async def test_a_turn_request_keeps_its_prefix_and_own_rows(store: Store) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(session.id, [user("q"), user("other"), assistant("mine")])
    view = await WorkingSet(store).active(await store.get_session(session.id))
    request = view.request("sys", view.index_of(ids[0]) + 1, [view.index_of(ids[2])])
    assert [m["content"] for m in request] == ["sys", "[alice] q", "mine"]


async def test_least_recently_used_sessions_are_dropped(store: Store) -> None:
    ws = WorkingSet(store, max_sessions=2)
    sessions = [await store.active_session(f"console:room{n}") for n in range(3)]
    for session in sessions:
        await store.append_messages(session.id, [user("hi")])
        await ws.active(await store.get_session(session.id))
    assert ws.loads == 3
    await ws.active(await store.get_session(sessions[2].id))  # still held
    await ws.active(await store.get_session(sessions[0].id))  # dropped, read again
    assert ws.loads == 4

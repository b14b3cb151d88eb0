"""Property: a session's running totals always equal a recount of its active rows."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compactbot.bot.store import NewMessage, SessionRecord
from compactbot.bot.store.backends import Store
from tests.store.conftest import FreshStore

tokens = st.integers(min_value=0, max_value=5000)
batch = st.lists(tokens, min_size=1, max_size=6)
operation = st.one_of(
    st.tuples(st.just("append"), batch),
    st.tuples(st.just("compact"), st.floats(0, 1), st.lists(tokens, max_size=4)),
    st.tuples(st.just("stale_compact"), st.floats(0, 1), st.lists(tokens, max_size=4)),
    st.tuples(st.just("new_session")),
)


def _messages(counts: list[int]) -> list[NewMessage]:
    return [NewMessage(role="user", content=f"t{n}", tokens=n) for n in counts]


async def _assert_totals_match(store: Store) -> None:
    for session in await store.list_sessions():
        assert (session.active_tokens, session.active_messages) == await store.recount(session.id)


async def _run(store: Store, ops: list[tuple]) -> None:
    chat = "console:prop"
    stale: SessionRecord | None = None
    for op in ops:
        session = await store.active_session(chat)
        if op[0] == "append":
            await store.append_messages(session.id, _messages(op[1]))
        elif op[0] in ("compact", "stale_compact"):
            snapshot = stale if op[0] == "stale_compact" and stale is not None else session
            active = await store.load_active(snapshot.id)
            watermark = active[int(op[1] * (len(active) - 1))].id if active else 0
            before = await store.get_session(snapshot.id)
            commit = await store.archive_and_compact(snapshot, _messages(op[2]), watermark)
            after = await store.get_session(snapshot.id)
            # The watermark must be a live row of the session: an empty one has none to fence on.
            assert (commit is not None) == (snapshot.version == before.version and bool(active))
            assert after.version == before.version + (commit is not None)
            stale = snapshot
        else:
            await store.new_session(chat)
        await _assert_totals_match(store)


# The fixture is a factory: each example opens its own fresh store.
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(operation, min_size=1, max_size=12))
async def test_running_totals_equal_recount_after_any_sequence(
    ops: list[tuple], open_fresh_store: FreshStore
) -> None:
    async with open_fresh_store() as store:
        await _run(store, ops)

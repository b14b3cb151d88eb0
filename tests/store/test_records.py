"""Round-trips of records through the store: messages, sessions, settings, pins, usage, dedup."""

from __future__ import annotations

from pathlib import Path

from compactbot.bot.store import CompressionEvent, NewMessage, SqliteStore
from compactbot.bot.store.backends import Store
from compactbot.compression.state import CompressorState
from tests.store.conftest import ManualClock
from tests.store.factories import summary, user

PARTS = [
    {"type": "text", "text": "what is in this picture? 图片"},
    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
]


async def test_string_content_round_trips_exactly(store: Store) -> None:
    session = await store.active_session("console:room")
    text = '  {"looks": "like json"}\n\ttrailing space '

    await store.append_messages(session.id, [NewMessage(role="user", content=text, tokens=1)])

    [stored] = await store.load_active(session.id)
    assert stored.content == text and isinstance(stored.content, str)


async def test_list_content_and_tool_fields_round_trip_exactly(store: Store) -> None:
    session = await store.active_session("console:room")
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        NewMessage(
            role="user",
            content=PARTS,
            tokens=1600,
            author_id="42",
            author_name="Bo",
            author_admin=False,
        ),
        NewMessage(role="assistant", content=None, tokens=9, tool_calls=[call]),
        NewMessage(role="tool", content="ok", tokens=1, tool_call_id="c1", name="f"),
    ]

    await store.append_messages(session.id, messages)

    stored = await store.load_active(session.id)
    assert [m.to_openai() for m in stored] == [
        {"role": "user", "content": PARTS},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "f"},
    ]
    assert (stored[0].author_id, stored[0].author_name, stored[0].author_admin) == (
        "42",
        "Bo",
        False,
    )
    assert stored[1].author_admin is None


async def test_compressor_state_round_trips(store: Store) -> None:
    session = await store.active_session("console:room")
    state = CompressorState(
        compression_count=3,
        previous_summary="S",
        strikes=1,
        pause_until=5.5,
        pause_level=2,
        cooldown_until=7.0,
        cooldown_cause="network",
        failure_streak=2,
        last_prompt_tokens=-1,
        verdict_pending=True,
    )

    await store.save_compressor_state(session.id, state)

    assert (await store.get_session(session.id)).compressor == state


async def test_active_session_is_reused_and_new_session_ends_it(store: Store) -> None:
    first = await store.active_session("console:room")
    assert (await store.active_session("console:room")).id == first.id

    second = await store.new_session("console:room")

    sessions = await store.list_sessions("console:room")
    assert [s.id for s in sessions] == [first.id, second.id]
    assert sessions[0].ended_at is not None and sessions[1].ended_at is None
    assert (await store.active_session("console:room")).id == second.id


async def test_per_user_sessions_are_separate(store: Store) -> None:
    shared = await store.active_session("console:room")
    alice = await store.active_session("console:room", "alice")

    assert len({shared.id, alice.id}) == 2
    assert (await store.active_session("console:room", "alice")).id == alice.id


async def test_mark_update_processed_dedups_redeliveries(store: Store) -> None:
    assert await store.mark_update_processed("telegram", "1001")
    assert not await store.mark_update_processed("telegram", "1001")
    assert await store.mark_update_processed("discord", "1001")


async def test_processed_updates_are_forgotten_after_a_week(
    store: Store, clock: ManualClock
) -> None:
    assert await store.mark_update_processed("telegram", "1")
    clock.advance(8 * 24 * 3600)
    await store.mark_update_processed("telegram", "2")

    assert await store.mark_update_processed("telegram", "1")


async def test_pins_add_list_remove(store: Store) -> None:
    first = await store.add_pin("console:room", "deploys only on Tuesdays", "alice")
    second = await store.add_pin("console:room", "budget is 4,200 EUR", None)
    await store.add_pin("console:other", "elsewhere", None)

    assert [p.text for p in await store.list_pins("console:room")] == [first.text, second.text]
    assert not await store.remove_pin("console:other", first.id)
    assert await store.remove_pin("console:room", first.id)
    assert await store.list_pins("console:room") == [second]


async def test_usage_accumulates_per_day_and_purpose(store: Store) -> None:
    await store.add_usage("console:room", "alice", "reply", 100, 10, day="2026-11-01")
    await store.add_usage("console:room", "alice", "reply", 50, 5, day="2026-11-01")
    await store.add_usage("console:room", "alice", "compression", 900, 90, day="2026-11-01")
    await store.add_usage("console:room", None, "reply", 7, 1, day="2026-11-02")
    await store.add_usage("console:room", "alice", "reply", 1, 1, day="2026-10-31")

    found = await store.usage("console:room", "2026-11-01")

    assert [(u.day, u.user_id, u.purpose, u.prompt_tokens, u.completion_tokens, u.calls)
            for u in found] == [
        ("2026-11-01", "alice", "compression", 900, 90, 1),
        ("2026-11-01", "alice", "reply", 150, 15, 2),
        ("2026-11-02", None, "reply", 7, 1, 1),
    ]  # fmt: skip


async def test_chat_settings_set_get_unset_and_sql_text_is_data(store: Store) -> None:
    hostile = "'); DROP TABLE chat_settings; --"
    await store.set_chat_setting("console:room", "system_prompt", hostile)
    await store.set_chat_setting("console:room", "threshold", "0.4")
    await store.set_chat_setting("console:room", "threshold", "0.6")

    assert await store.get_chat_settings("console:room") == {
        "system_prompt": hostile,
        "threshold": "0.6",
    }
    assert await store.unset_chat_setting("console:room", "threshold")
    assert not await store.unset_chat_setting("console:room", "threshold")


async def test_compression_events_are_listed_newest_first(store: Store) -> None:
    session = await store.active_session("console:room")
    for outcome in ("compressed", "noop"):
        await store.record_compression_event(
            CompressionEvent("console:room", session.id, "manual", 1.0, 2.0, outcome)
        )

    events = await store.list_compression_events(chat_key="console:room")

    assert [e.outcome for e in events] == ["noop", "compressed"]
    assert events[0].id is not None


async def test_compression_events_keep_their_summary_calls_and_cost(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.record_compression_event(
        CompressionEvent(
            "console:room", session.id, "hygiene", 1.0, 2.0, "compressed",
            summary_calls=3, summary_cost_tokens=4_321,
        )
    )  # fmt: skip

    [event] = await store.list_compression_events(chat_key="console:room")

    assert (event.summary_calls, event.summary_cost_tokens) == (3, 4_321)


async def test_migrate_chat_keeps_history_settings_pins_and_usage(store: Store) -> None:
    old, new = "telegram:-42", "telegram:-10042"
    await store.upsert_chat(old, "telegram", title="Team")
    session = await store.active_session(old)
    ids = await store.append_messages(session.id, [user("before migration")])
    await store.archive_and_compact(session, [summary("S")], ids[-1])
    await store.set_chat_setting(old, "threshold", "0.4")
    await store.add_pin(old, "rule", None)
    await store.add_usage(old, "alice", "reply", 10, 1, day="2026-11-01")
    await store.add_usage(new, "alice", "reply", 5, 1, day="2026-11-01")

    await store.migrate_chat(old, new)

    assert await store.get_chat(old) is None
    chat = await store.get_chat(new)
    assert chat is not None and chat.title == "Team"
    assert (await store.active_session(new)).id == session.id
    assert [m.text for m in await store.load_history(new)] == ["[alice] before migration", "S"]
    assert len(await store.search(new, "migration")) == 1
    assert await store.get_chat_settings(new) == {"threshold": "0.4"}
    assert [p.text for p in await store.list_pins(new)] == ["rule"]
    [usage] = await store.usage(new, "2026-11-01")
    assert (usage.prompt_tokens, usage.calls) == (15, 2)
    assert await store.get_chat_settings(old) == {} and await store.usage(old, "2000-01-01") == []


async def test_migrate_chat_keeps_the_old_session_open_when_new_chat_started_one(
    store: Store,
) -> None:
    old_session = await store.active_session("telegram:-42")
    await store.active_session("telegram:-10042")

    await store.migrate_chat("telegram:-42", "telegram:-10042")

    assert (await store.active_session("telegram:-10042")).id == old_session.id


async def test_memory_database_works_like_a_file(tmp_path: Path) -> None:
    async with SqliteStore(":memory:") as store:
        session = await store.active_session("console:room")
        await store.append_messages(session.id, [user("in memory")])
        assert await store.recount(session.id) == (5, 1)

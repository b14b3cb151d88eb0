"""Forgetting (SPEC 16) on both backends: the text leaves the archive, the index, the revisions,
the memory and every summary, reply and tool result that quoted it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import asyncpg

from compactbot.bot.store import NewMessage, PostgresStore, SqliteStore
from compactbot.bot.store.backends import Store
from compactbot.bot.store.reply_quotes import FORGOTTEN_QUOTE, quote, quote_body
from compactbot.compression.memory import Memory, MemoryEntry
from tests.store.conftest import ManualClock
from tests.store.factories import assistant, summary, user

CHAT = "discord:55"
SECRET = "Dave lives at 221B Baker Street"


def posted(text: str, platform_id: str, *, author: str = "dave") -> NewMessage:
    return replace(user(text, author=author), platform_message_id=platform_id)


async def _chat_with_a_secret(store: Store) -> tuple[int, list[int]]:
    """Dave's secret, compacted into memory and a summary, quoted by a tool result and the bot."""
    session = await store.active_session(CHAT)
    ids = await store.append_messages(
        session.id,
        [
            posted(SECRET, "1"),
            posted("the deploy is on Friday", "2", author="erin"),
            posted("my cat is called Tom", "3"),
        ],
    )
    memory = Memory(
        (
            MemoryEntry(1, "fact", SECRET, speaker="dave", sources=(str(ids[0]),)),
            MemoryEntry(2, "decision", "deploy on Friday", speaker="erin", sources=(str(ids[1]),)),
            MemoryEntry(3, "fact", "the cat is Tom", speaker="dave", sources=(str(ids[2]),)),
        ),
        reread=(str(ids[0]),),
    )
    body = f"Summary\n- [dave] {SECRET}\n- [erin] deploy on Friday\n- [dave] the cat is Tom"
    fresh = await store.get_session(session.id)
    assert await store.archive_and_compact(fresh, [summary(body)], ids[1], memory=memory)
    await store.append_messages(
        session.id,
        [
            NewMessage(role="tool", content=f"#1 [dave] {SECRET}\n#2 deploy", tokens=9),
            assistant(f"You said: {SECRET}"),
        ],
    )
    return session.id, ids


async def _everything_readable(store: Store, session_id: int) -> str:
    """Every text a prompt, a tool or the CLI can read from the store."""
    parts = [str(m.content) for m in await store.load_history(CHAT)]
    parts += [
        h.text for word in ("Baker", "221B", "Dave lives") for h in await store.search(CHAT, word)
    ]
    parts += [e.text for e in (await store.load_memory(session_id)).entries]
    session = await store.get_session(session_id)
    parts.append(session.compressor.previous_summary or "")
    return "\n".join(parts)


async def test_forgetting_a_message_removes_it_and_what_was_built_from_it(store: Store) -> None:
    session_id, _ = await _chat_with_a_secret(store)
    assert "Baker" in await _everything_readable(store, session_id)
    before = await store.get_session(session_id)

    assert await store.forget_messages(CHAT, ["1"]) >= 1

    readable = await _everything_readable(store, session_id)
    assert "Baker" not in readable
    assert "deploy on Friday" in readable and "the cat is Tom" in readable
    memory = await store.load_memory(session_id)
    assert [e.id for e in memory.entries] == [2, 3]
    assert memory.reread == ()
    after = await store.get_session(session_id)
    assert after.version > before.version
    assert (after.active_tokens, after.active_messages)[1] == (await store.recount(session_id))[1]


async def test_a_member_can_forget_only_their_own_message(store: Store) -> None:
    await _chat_with_a_secret(store)

    assert await store.forget_messages(CHAT, ["1"], author_id="erin") == 0
    assert await store.forget_messages(CHAT, ["2"], author_id="erin") >= 1

    assert await store.find_platform_message(CHAT, "1") is not None
    assert await store.find_platform_message(CHAT, "2") is None


async def test_forgetting_a_member_removes_everything_they_wrote_and_nothing_else(
    store: Store,
) -> None:
    session_id, _ = await _chat_with_a_secret(store)
    assert await store.count_member_messages(CHAT, "dave") == 2

    assert await store.forget_member(CHAT, "dave") >= 2

    readable = await _everything_readable(store, session_id)
    assert "Baker" not in readable and "Tom" not in readable
    assert "deploy on Friday" in readable
    assert await store.count_member_messages(CHAT, "dave") == 0


async def test_a_reply_loses_its_quote_of_a_forgotten_message_and_keeps_its_own_words(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    quoted = quote("dave", quote_body(f"[dave] {SECRET}"))
    restated = f"{quoted} nice, and I live at 221B Baker Street too"
    await store.append_messages(
        session.id, [posted(SECRET, "1"), posted(restated, "2", author="erin")]
    )

    assert await store.forget_messages(CHAT, ["1"]) == 1

    [reply] = [m.text for m in await store.load_history(CHAT)]
    assert reply == f"[erin] {FORGOTTEN_QUOTE} nice, and I live at 221B Baker Street too"


async def test_a_row_without_a_platform_id_is_forgotten_with_its_copies_and_nothing_else(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    stub = NewMessage(role="assistant", content="", tokens=3, tool_calls=[call], created_at=5.0)
    result = NewMessage(
        role="tool", content="#1 found", tokens=3, tool_call_id="c1", created_at=5.0
    )
    reply = replace(assistant(f"You said: {SECRET}"), created_at=5.0)
    ids = await store.append_messages(session.id, [posted("hello", "1"), stub, result, reply])
    # A compaction carries the reply over: its copy keeps its role, time and text.
    copy = replace(reply, copy_of=ids[3])
    fresh = await store.get_session(session.id)
    assert await store.archive_and_compact(fresh, [summary("Summary: hello"), copy], ids[3])

    assert await store.forget_rows(CHAT, [ids[3]]) == 2

    left = [(m.role, m.text) for m in await store.load_history(CHAT)]
    assert not any("Baker" in text for _, text in left)
    assert ("assistant", "") in left and ("tool", "#1 found") in left


async def test_an_edited_message_forgotten_leaves_no_revision(store: Store) -> None:
    session = await store.active_session(CHAT)
    [mid] = await store.append_messages(session.id, [posted(SECRET, "9")])
    assert await store.edit_platform_message(CHAT, "9", "[dave] moved away", 4)
    assert await store.message_revisions(mid) != []

    assert await store.forget_messages(CHAT, ["9"]) == 1

    assert await store.message_revisions(mid) == []
    assert await store.search(CHAT, "Baker") == []


async def test_retention_forgets_rows_older_than_the_cutoff(
    store: Store, clock: ManualClock
) -> None:
    session = await store.active_session(CHAT)
    await store.append_messages(session.id, [posted("old news", "1")])
    clock.advance(3600)
    await store.append_messages(session.id, [posted("fresh news", "2")])

    assert await store.forget_before(CHAT, clock.now - 60) == 1

    assert [m.text for m in await store.load_history(CHAT)] == ["[dave] fresh news"]
    assert await store.forget_before(CHAT, clock.now - 60) == 0


async def test_nothing_matched_changes_nothing(store: Store) -> None:
    session_id, _ = await _chat_with_a_secret(store)
    before = await store.get_session(session_id)

    assert await store.forget_messages(CHAT, ["404"]) == 0
    assert await store.forget_messages("telegram:1", ["1"]) == 0

    assert (await store.get_session(session_id)).version == before.version


async def test_a_forgotten_text_is_gone_from_the_sqlite_files_bytes(
    tmp_path: Path, clock: ManualClock
) -> None:
    path = tmp_path / "bytes.db"
    async with SqliteStore(path, clock=clock) as store:
        session_id, _ = await _chat_with_a_secret(store)
        await store.index_pending()
        assert b"221B Baker" in _file_bytes(path)

        await store.forget_messages(CHAT, ["1"])

        assert b"221B Baker" not in _file_bytes(path)
        assert "Baker" not in await _everything_readable(store, session_id)


async def test_a_forgotten_text_is_gone_from_postgresqls_live_tables(pg: PostgresStore) -> None:
    await _chat_with_a_secret(pg)

    await pg.forget_messages(CHAT, ["1"])

    conn = await asyncpg.connect(pg.dsn)
    try:
        tables = await conn.fetch(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
        )
        for table in tables:
            name = table["table_name"]
            found = await conn.fetchval(
                f'SELECT count(*) FROM "{name}" t WHERE t::text LIKE $1', "%Baker%"
            )
            assert found == 0, name
    finally:
        await conn.close()


def _file_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name))

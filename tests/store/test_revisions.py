"""Messages addressed by platform id: edits, deletes and late content, on both backends."""

from __future__ import annotations

from dataclasses import replace

from compactbot.bot.store import NewMessage
from compactbot.bot.store.backends import Store
from compactbot.compression.template import SUMMARY_END_MARKER, merge_into, wrap_summary
from tests.store.factories import summary, user

CHAT = "telegram:-100"


def posted(text: str, platform_id: str, tokens: int = 5) -> NewMessage:
    return replace(user(text, tokens), platform_message_id=platform_id)


async def test_an_edit_is_found_by_its_new_text_and_keeps_the_old_as_a_revision(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    [mid] = await store.append_messages(session.id, [posted("deploy on Tuesday", "77", 5)])
    before = await store.get_session(session.id)

    assert await store.edit_platform_message(CHAT, "77", "[alice] deploy on Thursday", 8)

    after = await store.get_session(session.id)
    assert [h.message_id for h in await store.search(CHAT, "Thursday")] == [mid]
    assert await store.search(CHAT, "Tuesday") == []
    assert await store.message_revisions(mid) == ["[alice] deploy on Tuesday"]
    found = await store.find_platform_message(CHAT, "77")
    assert found is not None and found.content == "[alice] deploy on Thursday"
    assert (after.active_tokens, after.active_messages) == (8, 1) == await store.recount(session.id)
    assert after.version == before.version + 1


async def test_a_deleted_message_leaves_search_the_transcript_and_the_totals(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(
        session.id, [posted("the secret plan", "80", 6), posted("kept", "81", 4)]
    )
    assert await store.edit_platform_message(CHAT, "80", "[alice] the secret plan v2", 7)

    assert await store.forget_messages(CHAT, ["80"])

    assert await store.search(CHAT, "secret") == []
    assert [m.id for m in await store.load_active(session.id)] == [ids[1]]
    assert await store.message_revisions(ids[0]) == []
    after = await store.get_session(session.id)
    assert (after.active_tokens, after.active_messages) == (4, 1) == await store.recount(session.id)


async def test_an_edit_reaches_the_compaction_copy_and_counts_only_the_live_one(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(session.id, [user("old"), posted("tail", "90", 5)])
    commit = await store.archive_and_compact(
        session, [summary("S", 20), posted("tail", "90", 5)], ids[-1]
    )
    assert commit is not None

    assert await store.edit_platform_message(CHAT, "90", "[alice] tail, edited", 9)

    history = await store.load_history(CHAT)
    assert [m.content for m in history if m.platform_message_id == "90"] == [
        "[alice] tail, edited",
        "[alice] tail, edited",
    ]
    after = await store.get_session(session.id)
    assert (
        (after.active_tokens, after.active_messages) == (29, 2) == await store.recount(session.id)
    )
    # The edit is a new version: a compaction of the snapshot before it is fenced out.
    fresh = await store.get_session(session.id)
    assert fresh.version == commit.version + 1
    assert await store.archive_and_compact(replace(fresh, version=commit.version), [], None) is None


async def test_an_unknown_platform_id_changes_nothing(store: Store) -> None:
    session = await store.active_session(CHAT)
    await store.append_messages(session.id, [posted("hello", "1")])
    before = await store.load_history(CHAT)

    assert not await store.edit_platform_message(CHAT, "2", "x", 1)
    assert not await store.forget_messages(CHAT, ["2"])
    assert not await store.edit_platform_message("telegram:-999", "1", "x", 1)
    assert await store.find_platform_message(CHAT, "2") is None
    assert await store.load_history(CHAT) == before


async def test_late_content_replaces_the_text_totals_and_search_without_a_revision(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    [mid] = await store.append_messages(session.id, [posted("see attached", "5", 3)])
    content = [{"type": "text", "text": "see attached"}, {"type": "text", "text": "quarterly"}]

    await store.set_message_content(mid, content, 40)

    [stored] = await store.load_messages(session.id, [mid])
    assert stored.content == content
    assert [h.message_id for h in await store.search(CHAT, "quarterly")] == [mid]
    assert await store.message_revisions(mid) == []
    after = await store.get_session(session.id)
    assert (
        (after.active_tokens, after.active_messages) == (40, 1) == await store.recount(session.id)
    )
    await store.set_message_content(mid + 1000, "nobody", 1)  # an unknown id: nothing happens
    assert await store.recount(session.id) == (40, 1)


async def test_an_edit_while_a_compaction_runs_is_applied_after_its_commit(store: Store) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(
        session.id, [posted("middle", "91", 5), user("more"), posted("tail", "92", 5)]
    )
    read = await store.get_session(session.id)
    # Both edits land after the compaction read the rows and before it commits.
    assert await store.edit_platform_message(CHAT, "91", "[alice] middle, edited", 7)
    assert await store.edit_platform_message(CHAT, "92", "[alice] tail, edited", 9)
    edited = await store.get_session(session.id)
    copy = replace(posted("tail", "92", 5), copy_of=ids[-1])

    commit = await store.archive_and_compact(read, [summary("S", 20), copy], ids[-1], span_ids=ids)

    assert commit is not None and commit.version == edited.version + 1
    [live_summary, live_tail] = await store.load_active(session.id)
    assert live_summary.content == "S"
    assert (live_tail.content, live_tail.tokens) == ("[alice] tail, edited", 9)
    archived = await store.load_messages(session.id, ids)
    assert [m.content for m in archived if not m.active] == [
        "[alice] middle, edited",
        "[alice] more",
        "[alice] tail, edited",
    ]
    assert await store.message_revisions(ids[0]) == ["[alice] middle"]
    after = await store.get_session(session.id)
    totals = (after.active_tokens, after.active_messages)
    assert totals == (29, 2) == await store.recount(session.id)


async def test_a_delete_of_a_row_the_compaction_read_still_fences_it_out(store: Store) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(session.id, [posted("secret", "93", 5), user("more")])
    read = await store.get_session(session.id)
    assert await store.forget_messages(CHAT, ["93"])

    # Its summary was written from a message that is gone: it must not be committed.
    assert await store.archive_and_compact(read, [summary("S")], ids[-1], span_ids=ids) is None
    assert [m.id for m in await store.load_active(session.id)] == [ids[1]]


def merged(text: str, platform_id: str, tokens: int) -> NewMessage:
    """A compaction's copy of a kept message with the summary merged into it (SPEC 6.9)."""
    content = merge_into(f"[alice] {text}", wrap_summary("- the budget cap is 40k"))
    return replace(posted(text, platform_id, tokens), content=content, kind="summary")


async def test_an_edit_of_a_message_a_summary_was_merged_into_keeps_the_summary(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(session.id, [user("old"), posted("first kept", "95", 5)])
    copy = merged("first kept", "95", 30)
    assert await store.archive_and_compact(session, [copy], ids[-1]) is not None

    assert await store.edit_platform_message(CHAT, "95", "[alice] first kept, edited", 8)

    [live] = await store.load_active(session.id)
    assert live.content == merge_into(
        "[alice] first kept, edited", wrap_summary("- the budget cap is 40k")
    )
    assert live.platform_message_id == "95" and live.tokens == 30 - 5 + 8
    assert await store.message_revisions(ids[-1]) == ["[alice] first kept"]
    found = await store.find_platform_message(CHAT, "95")
    assert found is not None and found.content == "[alice] first kept, edited"
    after = await store.get_session(session.id)
    assert (
        (after.active_tokens, after.active_messages) == (33, 1) == await store.recount(session.id)
    )

    assert await store.forget_messages(CHAT, ["95"])

    [live] = await store.load_active(session.id)
    assert live.kind == "summary" and live.platform_message_id is None
    assert "first kept" not in live.text and "the budget cap is 40k" in live.text
    assert live.text.endswith(SUMMARY_END_MARKER)
    after = await store.get_session(session.id)
    # The summary's share of the copy's tokens (a compaction recounts it exactly).
    assert after.active_tokens < 33 and after.active_messages == 1
    assert (after.active_tokens, after.active_messages) == await store.recount(session.id)
    assert await store.message_revisions(live.id) == []


async def test_an_edit_while_a_compaction_runs_reaches_the_copy_its_summary_merged_into(
    store: Store,
) -> None:
    session = await store.active_session(CHAT)
    ids = await store.append_messages(session.id, [user("old"), posted("first kept", "96", 5)])
    read = await store.get_session(session.id)
    assert await store.edit_platform_message(CHAT, "96", "[alice] first kept, edited", 8)
    copy = replace(merged("first kept", "96", 30), copy_of=ids[-1], copied_tokens=5)

    assert await store.archive_and_compact(read, [copy], ids[-1], span_ids=ids) is not None

    [live] = await store.load_active(session.id)
    assert live.content == merge_into(
        "[alice] first kept, edited", wrap_summary("- the budget cap is 40k")
    )
    after = await store.get_session(session.id)
    totals = (after.active_tokens, after.active_messages)
    assert totals == (33, 1) == await store.recount(session.id)

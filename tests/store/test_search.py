"""Full-text search over a chat's messages, archived ones included."""

from __future__ import annotations

from compactbot.bot.store import NewMessage
from compactbot.bot.store.backends import Store
from tests.store.factories import summary, user


async def test_finds_a_word_that_only_exists_in_archived_messages(store: Store) -> None:
    session = await store.active_session("console:room")
    ids = await store.append_messages(
        session.id, [user("the staging password rotates on fridays"), user("ok")]
    )
    await store.archive_and_compact(session, [summary("S: talked about ops")], ids[-1])

    hits = await store.search("console:room", "rotates")

    assert [h.text for h in hits] == ["[alice] the staging password rotates on fridays"]
    assert hits[0].active is False


async def test_finds_a_chinese_substring(store: Store) -> None:
    session = await store.active_session("telegram:-100")
    await store.append_messages(session.id, [user("我们明天部署新版本"), user("好的")])

    hits = await store.search("telegram:-100", "部署")

    assert [h.text for h in hits] == ["[alice] 我们明天部署新版本"]


async def test_finds_a_three_character_japanese_substring(store: Store) -> None:
    session = await store.active_session("telegram:-100")
    await store.append_messages(session.id, [user("明日の会議は午後三時からです")])

    hits = await store.search("telegram:-100", "午後三時")

    assert len(hits) == 1


async def test_does_not_return_other_chats_messages(store: Store) -> None:
    mine = await store.active_session("console:mine")
    theirs = await store.active_session("console:theirs")
    await store.append_messages(mine.id, [user("deploy tonight")])
    await store.append_messages(theirs.id, [user("deploy tomorrow")])

    hits = await store.search("console:mine", "deploy")

    assert [h.session_id for h in hits] == [mine.id]


async def test_query_syntax_is_treated_as_text(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user('he said "NEAR(a b)" OR drop table; -- x*')])

    for query in ['"NEAR(a b)"', "OR drop", "-- x*", "'; DROP TABLE messages; --", '"', "AND"]:
        await store.search("console:room", query)  # must not raise

    assert len(await store.search("console:room", '"NEAR(a b)" OR')) == 1
    assert len(await store.load_active(session.id)) == 1


async def test_short_query_falls_back_to_substring_scan(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [user("version v2 shipped"), user("100% sure")])

    assert len(await store.search("console:room", "v2")) == 1
    assert len(await store.search("console:room", "%")) == 1


async def test_finds_text_inside_list_content_and_tool_calls(store: Store) -> None:
    session = await store.active_session("console:room")
    parts = [
        {"type": "text", "text": "look at this diagram"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ]
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "read", "arguments": '{"path": "budget.xlsx"}'},
    }
    await store.append_messages(
        session.id,
        [
            NewMessage(role="user", content=parts, tokens=1600),
            NewMessage(role="assistant", content=None, tokens=20, tool_calls=[call]),
        ],
    )

    assert len(await store.search("console:room", "diagram")) == 1
    assert len(await store.search("console:room", "budget.xlsx")) == 1


async def test_list_content_is_searched_by_its_text_parts_only(store: Store) -> None:
    session = await store.active_session("console:room")
    parts = [
        {"type": "text", "text": "see the chart"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD"}},
    ]
    await store.append_messages(session.id, [NewMessage(role="user", content=parts, tokens=900)])

    assert len(await store.search("console:room", "chart")) == 1
    assert len(await store.search("console:room", "he")) == 1  # a short needle: the scan
    # The JSON around the text (keys, an image's data) is not what anyone said.
    for needle in ("image_url", "base64", "QUJD", "ty", "ur"):
        assert await store.search("console:room", needle) == [], needle

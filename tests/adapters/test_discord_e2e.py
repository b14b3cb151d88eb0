"""The Discord adapter end to end: real discord.py vs FakeDiscord, real App vs FakeOpenAI."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from pathlib import Path

import discord
import pytest

from compactbot.adapters.discord import DiscordPlatform
from compactbot.adapters.discord_text import DISCORD_MAX_CHARS, discord_chunks
from tests.adapters.discord_rig import GUILD_READY_SECONDS, WAIT_SECONDS, Rig, discord_rig
from tests.fakes.discord_payloads import MANAGE_MESSAGES
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.fixtures import fake_discord  # noqa: F401  (pytest fixture)
from tests.fakes.openai_server import Reply
from tests.harness import make_config, running_app

FENCE = "```"


@pytest.fixture
async def rig(tmp_path: Path, fake_discord: FakeDiscord) -> AsyncIterator[Rig]:  # noqa: F811
    async with discord_rig(tmp_path, fake_discord) as running:
        yield running


async def test_mention_is_answered_with_no_pings_allowed(rig: Rig) -> None:
    rig.llm.script(Reply("Hello @everyone and @here!"))
    incoming = await rig.discord.send_message("what's new?", mention_bot=True)
    sent = await rig.next_sent()
    assert sent.channel_id == rig.discord.channel_id
    mentions = sent.allowed_mentions or {}
    assert mentions["parse"] == []
    assert not mentions.get("users") and not mentions.get("roles")
    assert not mentions.get("replied_user")
    assert "@everyone" not in sent.content and "@here" not in sent.content
    assert sent.message_reference is not None
    assert int(sent.message_reference["message_id"]) == int(incoming["id"])
    # The bot's own mention is not part of what the model reads.
    assert rig.llm.completions[-1]["messages"][-1]["content"] == "[alice] what's new?"


async def test_reply_to_the_bots_message_is_answered(rig: Rig) -> None:
    rig.llm.script(Reply("first answer"), Reply("second answer"))
    await rig.discord.send_message("hi", mention_bot=True)
    first = await rig.next_sent()
    await rig.discord.send_message("and then?", reply_to_message_id=first.message_id)
    assert (await rig.next_sent()).content == "second answer"


async def test_long_reply_is_split_under_2000_chars_with_code_block_intact(rig: Rig) -> None:
    code = "\n".join(f"    total += compute({i})  # step {i}" for i in range(80))
    text = "Intro. " * 200 + f"\n\n{FENCE}python\n{code}\n{FENCE}\n\n" + "Outro. " * 100
    rig.llm.script(Reply(text))
    await rig.discord.send_message("write code", mention_bot=True)
    expected = len(discord_chunks(text))
    assert expected >= 3
    chunks = [await rig.next_sent() for _ in range(expected)]
    assert all(len(c.content) <= DISCORD_MAX_CHARS for c in chunks)
    assert all(c.content.count(FENCE) % 2 == 0 for c in chunks)  # every chunk closes its fence
    delivered = "\n".join(c.content for c in chunks)
    assert all(line in delivered for line in code.splitlines())
    assert chunks[0].message_reference is not None
    assert all(c.message_reference is None for c in chunks[1:])


async def test_message_from_another_bot_is_ignored(rig: Rig) -> None:
    rig.llm.script(Reply("to the human"))
    await rig.discord.send_message(
        "ping", author_id=2002, author_name="otherbot", bot=True, mention_bot=True
    )
    await rig.discord.send_message("hello", mention_bot=True)
    handled = await rig.next_handled()
    assert handled.author_name == "alice"
    assert (await rig.next_sent()).content == "to the human"
    await rig.settle()
    assert rig.gateway.handled.empty()
    assert len(rig.llm.completions) == 1
    assert rig.discord.sent.empty()


async def test_thread_is_a_separate_chat_answered_in_the_thread(rig: Rig) -> None:
    fake = rig.discord
    rig.llm.script(Reply("in the channel"), Reply("in the thread"))
    await fake.send_message("channel question", mention_bot=True)
    channel_message = await rig.next_handled()
    assert (await rig.next_sent()).channel_id == fake.channel_id
    await fake.send_message("thread question", mention_bot=True, channel_id=fake.thread_id)
    thread_message = await rig.next_handled()
    sent = await rig.next_sent()
    assert sent.channel_id == fake.thread_id
    assert sent.content == "in the thread"
    assert channel_message.chat_key == f"discord:{fake.channel_id}"
    assert thread_message.chat_key == f"discord:{fake.channel_id}:{fake.thread_id}"
    thread_chat = await rig.app.services.store.get_chat(thread_message.chat_key)
    assert thread_chat is not None and thread_chat.parent_key == channel_message.chat_key
    # The thread's session starts empty: the channel's question is not in its prompt.
    prompt = rig.llm.completions[-1]["messages"]
    assert not any("channel question" in str(m.get("content")) for m in prompt)


async def test_unaddressed_message_is_stored_and_not_answered(rig: Rig) -> None:
    await rig.discord.send_message("just chatting among ourselves")
    handled = await rig.next_handled()
    assert handled.addressed is False
    await rig.settle()
    history = await rig.app.services.store.load_history(handled.chat_key)
    assert [m.content for m in history] == ["[alice] just chatting among ourselves"]
    assert rig.discord.sent.empty()
    assert rig.llm.completions == []


async def test_text_compress_from_member_without_manage_messages_is_refused(rig: Rig) -> None:
    await rig.discord.send_message("/compress")
    sent = await rig.next_sent()
    assert sent.content.startswith("⛔ /compress needs chat-admin rights")


async def test_text_compress_from_member_with_manage_messages_runs(rig: Rig) -> None:
    await rig.discord.send_message("/compress", member_permissions=MANAGE_MESSAGES)
    sent = await rig.next_sent()
    assert "⛔" not in sent.content
    assert sent.content.startswith(("Nothing to compress yet", "🗜️ Compressed"))
    events = await rig.app.services.store.list_compression_events(
        chat_key=f"discord:{rig.discord.channel_id}", limit=5
    )
    assert events  # the compactor ran and recorded its outcome


async def test_slash_commands_sync_to_the_configured_guild(
    tmp_path: Path,
    fake_discord: FakeDiscord,  # noqa: F811
) -> None:
    env = {"DISCORD_GUILD_ID": str(fake_discord.guild_id)}
    async with discord_rig(tmp_path, fake_discord, env):
        (path, body), *_ = fake_discord.command_syncs
    assert path == f"applications/{fake_discord.bot_id}/guilds/{fake_discord.guild_id}/commands"
    names = {command["name"] for command in body}
    assert {"help", "status", "compress", "compact", "new", "config", "pin", "unpin"} <= names


async def test_slash_commands_sync_globally_without_a_guild(rig: Rig) -> None:
    (path, body), *_ = rig.discord.command_syncs
    assert path == f"applications/{rig.discord.bot_id}/commands"
    assert "pins" in {command["name"] for command in body}


async def test_rate_limited_send_is_retried_and_delivered(rig: Rig) -> None:
    rig.llm.script(Reply("worth the wait"))
    rig.discord.rate_limit_next("/messages", retry_after=0.05)
    await rig.discord.send_message("hi", mention_bot=True)
    sent = await rig.next_sent()
    assert sent.content == "worth the wait"
    posts = [c for c in rig.discord.calls_to("POST /channels") if c.path.endswith("/messages")]
    assert len(posts) == 2  # the 429, then the retry discord.py made after Retry-After


async def test_start_with_a_wrong_token_fails_instead_of_hanging(
    tmp_path: Path,
    fake_discord: FakeDiscord,  # noqa: F811
) -> None:
    config = make_config(tmp_path, {"DISCORD_BOT_TOKEN": "not-the-token"})
    async with running_app(config) as app:
        platform = DiscordPlatform(
            config, app.gateway, client_options={"guild_ready_timeout": GUILD_READY_SECONDS}
        )
        with pytest.raises(discord.LoginFailure):
            await asyncio.wait_for(platform.start(), WAIT_SECONDS)
        await platform.stop()  # already stopped by the failed start: a no-op


async def test_lone_surrogate_in_a_discord_message_is_stored_repaired(rig: Rig) -> None:
    await rig.discord.send_message("half a pair \ud83d here")
    handled = await rig.next_handled()
    await rig.settle()
    history = await rig.app.services.store.load_history(handled.chat_key)
    assert [m.content for m in history] == ["[alice] half a pair \ufffd here"]


async def test_a_then_b_are_stored_a_b_in_twenty_of_twenty_trials(rig: Rig) -> None:
    # discord.py runs each MESSAGE_CREATE in its own task; the adapter queues them per channel
    # before anything awaits, so an unaddressed A is stored before the mention B that follows.
    for trial in range(20):
        await rig.discord.send_message(f"A{trial}: my order id is 44{trial:02d}", author_id=1002)
        await rig.discord.send_message(f"B{trial}: check it", mention_bot=True)
        handled = [await rig.next_handled(), await rig.next_handled()]
        assert [m.text.split(":")[0] for m in handled] == [f"A{trial}", f"B{trial}"]
        await rig.next_sent()
    await rig.settle()
    history = await rig.app.services.store.load_history(handled[0].chat_key)
    users = [str(m.content) for m in history if m.role == "user"]
    expected = [f"{kind}{t}" for t in range(20) for kind in "AB"]
    assert [text.split("] ", 1)[1].split(":")[0] for text in users] == expected
    # B's prompt could see A.
    assert "order id is 4419" in str(rig.llm.completions[-1]["messages"])


async def test_streamed_answer_is_one_message_edited_at_most_once_a_second(rig: Rig) -> None:
    answer = " ".join(f"word{i}" for i in range(600))[:3000]
    rig.llm.script(Reply(answer, chunk_chars=100, chunk_delay=0.08))
    await rig.discord.send_message("explain", mention_bot=True)
    preview = await rig.next_sent()
    second = await rig.next_sent()  # the final text's second chunk, after the edits
    chunks = discord_chunks(answer)
    assert len(chunks) == 2
    assert preview.content.endswith("…")  # a preview frame, not the final text
    edits = rig.discord.edit_log
    assert edits and all(e.message_id == preview.message_id for e in edits)
    times = rig.discord.edit_times
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(times))
    assert edits[-1].body["content"] == chunks[0]
    assert second.content == chunks[1]
    assert rig.llm.completions[-1]["stream"] is True

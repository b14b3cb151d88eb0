"""The real discord.py against FakeDiscord: connect, echo, allowed_mentions, 429 retry, roles."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import discord
import pytest

from tests.fakes.discord_payloads import MANAGE_GUILD, MANAGE_MESSAGES
from tests.fakes.discord_server import MODERATOR_PERMISSIONS, FakeDiscord
from tests.fakes.fixtures import fake_discord  # noqa: F401  (pytest fixture)

WAIT_SECONDS = 5
GUILD_READY_SECONDS = 0.05  # discord.py waits 2 s for more GUILD_CREATEs by default


class EchoClient(discord.Client):
    """Echoes messages that mention it, never pinging anyone, and records what it saw."""

    def __init__(self) -> None:
        intents = discord.Intents.default()
        intents.message_content = True
        super().__init__(intents=intents, guild_ready_timeout=GUILD_READY_SECONDS)
        self.seen: asyncio.Queue[discord.Message] = asyncio.Queue()

    async def on_message(self, message: discord.Message) -> None:
        if message.author.bot:
            return
        self.seen.put_nowait(message)
        assert self.user is not None
        if self.user in message.mentions or message.reference is not None:
            await message.reply(
                f"echo: {message.content}", allowed_mentions=discord.AllowedMentions.none()
            )


@pytest.fixture
async def client(fake_discord: FakeDiscord) -> AsyncIterator[EchoClient]:  # noqa: F811
    bot = EchoClient()
    task = asyncio.create_task(bot.start(fake_discord.token))
    await asyncio.wait_for(bot.wait_until_ready(), WAIT_SECONDS)
    yield bot
    await bot.close()
    await task


async def test_client_becomes_ready_with_guild_channel_and_thread(
    fake_discord: FakeDiscord,  # noqa: F811
    client: EchoClient,
) -> None:
    assert client.user is not None and client.user.id == fake_discord.bot_id
    guild = client.get_guild(fake_discord.guild_id)
    assert guild is not None
    assert guild.get_channel(fake_discord.channel_id) is not None
    thread = guild.get_thread(fake_discord.thread_id)
    assert thread is not None and thread.parent_id == fake_discord.channel_id
    assert fake_discord.calls_to("GET /users/@me")


async def test_mention_is_echoed_with_no_pings_allowed(
    fake_discord: FakeDiscord,  # noqa: F811
    client: EchoClient,
) -> None:
    incoming = await fake_discord.send_message("hi @everyone", mention_bot=True)
    sent = await asyncio.wait_for(fake_discord.sent.get(), WAIT_SECONDS)
    assert sent.content == f"echo: <@{fake_discord.bot_id}> hi @everyone"
    assert sent.channel_id == fake_discord.channel_id
    # AllowedMentions.none() omits replied_user: Discord then does not ping the replied user.
    assert sent.allowed_mentions == {"parse": []}
    assert sent.message_reference is not None
    assert int(sent.message_reference["message_id"]) == int(incoming["id"])


async def test_reply_to_bot_message_resolves_reference(
    fake_discord: FakeDiscord,  # noqa: F811
    client: EchoClient,
) -> None:
    await fake_discord.send_message("first", mention_bot=True)
    bot_reply = await asyncio.wait_for(fake_discord.sent.get(), WAIT_SECONDS)
    await fake_discord.send_message("second", reply_to_message_id=bot_reply.message_id)
    seen = [await asyncio.wait_for(client.seen.get(), WAIT_SECONDS) for _ in range(2)]
    resolved = seen[1].reference.resolved if seen[1].reference else None
    assert isinstance(resolved, discord.Message)
    assert resolved.author.id == fake_discord.bot_id


async def test_message_in_thread_arrives_on_thread_channel(
    fake_discord: FakeDiscord,  # noqa: F811
    client: EchoClient,
) -> None:
    await fake_discord.send_message(
        "in thread", mention_bot=True, channel_id=fake_discord.thread_id
    )
    message = await asyncio.wait_for(client.seen.get(), WAIT_SECONDS)
    assert isinstance(message.channel, discord.Thread)
    sent = await asyncio.wait_for(fake_discord.sent.get(), WAIT_SECONDS)
    assert sent.channel_id == fake_discord.thread_id


async def test_rate_limit_with_via_header_is_retried_transparently(
    fake_discord: FakeDiscord,  # noqa: F811
    client: EchoClient,
) -> None:
    fake_discord.rate_limit_next("/messages", retry_after=0.05)
    await fake_discord.send_message("hi", mention_bot=True)
    sent = await asyncio.wait_for(fake_discord.sent.get(), WAIT_SECONDS)
    assert sent.content.startswith("echo:")
    assert len(fake_discord.calls_to("POST /channels")) == 2


async def test_forbidden_surfaces_as_discord_forbidden(
    fake_discord: FakeDiscord,  # noqa: F811
    client: EchoClient,
) -> None:
    fake_discord.fail_next("/messages", 403, {"message": "Missing Permissions", "code": 50013})
    channel = client.get_channel(fake_discord.channel_id)
    assert isinstance(channel, discord.TextChannel)
    with pytest.raises(discord.Forbidden) as caught:
        await channel.send("x")
    assert caught.value.code == 50013


@pytest.mark.parametrize(
    ("permissions", "is_admin"),
    [(None, False), (MODERATOR_PERMISSIONS, True), (MANAGE_MESSAGES, True), (1 << 11, False)],
)
async def test_member_permissions_reach_guild_permissions(
    fake_discord: FakeDiscord,  # noqa: F811
    client: EchoClient,
    permissions: int | None,
    is_admin: bool,
) -> None:
    await fake_discord.send_message("hi", member_permissions=permissions)
    message = await asyncio.wait_for(client.seen.get(), WAIT_SECONDS)
    assert isinstance(message.author, discord.Member)
    perms = message.author.guild_permissions
    assert (perms.manage_guild or perms.manage_messages) is is_admin
    assert perms.manage_guild is bool(permissions and permissions & MANAGE_GUILD)


async def test_dropped_gateway_is_resumed_and_messages_flow_again(
    fake_discord: FakeDiscord,  # noqa: F811
    client: EchoClient,
) -> None:
    await fake_discord.drop_gateway()
    await asyncio.wait_for(fake_discord.resumed.wait(), WAIT_SECONDS)
    await fake_discord.send_message("back?", mention_bot=True)
    sent = await asyncio.wait_for(fake_discord.sent.get(), WAIT_SECONDS)
    assert sent.content.endswith("back?")

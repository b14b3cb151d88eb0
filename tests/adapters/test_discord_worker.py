"""Discord in `compactbot worker`: an AutoShardedClient on the assigned shards, identifies paced
through PostgreSQL like every other worker's, and outbox sends that carry nonces."""

from __future__ import annotations

from pathlib import Path

from compactbot.adapters.discord import DiscordPlatform
from compactbot.bot.events import ReplyTarget
from compactbot.bot.workers.identify_pacing import IdentifyPacing
from tests import postgres_server
from tests.adapters.discord_rig import GUILD_READY_SECONDS, RecordingGateway
from tests.fakes.discord_server import FakeDiscord
from tests.fakes.fixtures import fake_discord  # noqa: F401  (pytest fixture)
from tests.harness import make_config, running_app

INTERVAL = 0.3


async def test_a_worker_identifies_its_shards_only_paced_through_postgres(
    tmp_path: Path,
    fake_discord: FakeDiscord,  # noqa: F811
) -> None:
    server = postgres_server.require_server()
    config = make_config(tmp_path, {"DISCORD_BOT_TOKEN": fake_discord.token})
    async with (
        postgres_server.fresh_schema(server) as dsn,
        running_app(config) as app,
    ):
        platform = DiscordPlatform(
            config,
            RecordingGateway(app),
            client_options={"guild_ready_timeout": GUILD_READY_SECONDS},
            shards=((1, 3), 4),
            identify_pacing=IdentifyPacing(dsn, interval_seconds=INTERVAL),
        )
        await platform.start()
        try:
            assert platform.connected
            shards = [payload.get("shard") for _, payload in fake_discord.identifies]
            assert shards == [[1, 4], [3, 4]]
            (first, _), (second, _) = fake_discord.identifies
            assert second - first >= INTERVAL
        finally:
            await platform.stop()


async def test_outbox_sends_carry_a_nonce_per_chunk_that_discord_enforces(
    tmp_path: Path,
    fake_discord: FakeDiscord,  # noqa: F811
) -> None:
    config = make_config(tmp_path, {"DISCORD_BOT_TOKEN": fake_discord.token})
    async with running_app(config) as app:
        platform = DiscordPlatform(
            config,
            RecordingGateway(app),
            client_options={"guild_ready_timeout": GUILD_READY_SECONDS},
        )
        await platform.start()
        try:
            target = ReplyTarget("discord", str(fake_discord.channel_id))
            await platform.send_once(target, "word " * 700, "n0nce")  # two chunks
        finally:
            await platform.stop()
    posts = [c.body for c in fake_discord.calls if c.method == "POST" and "/messages" in c.path]
    assert [(p["nonce"], p["enforce_nonce"]) for p in posts] == [
        ("n0nce.0", True),
        ("n0nce.1", True),
    ]

"""Doctor check of Discord: the token, and the Message Content intent in the application flags."""

from __future__ import annotations

import asyncio

import aiohttp
import discord

from compactbot.bot.operators.doctor_report import Finding, fix, ok, skip
from compactbot.bot.settings.config import Config

AREA = "discord"


async def check_discord(config: Config, live: bool) -> list[Finding]:
    if config.discord.token is None:
        return [skip(AREA, "DISCORD_BOT_TOKEN not set")]
    http = discord.http.HTTPClient(asyncio.get_running_loop())
    try:
        me = await http.static_login(config.discord.token.get_secret_value())
        info = await http.application_info()
    except discord.LoginFailure:
        return [fix(AREA, "Discord refused DISCORD_BOT_TOKEN: reset it in the developer portal")]
    except (discord.HTTPException, aiohttp.ClientError, OSError) as exc:
        return [fix(AREA, f"cannot check the application ({type(exc).__name__})")]
    finally:
        await http.close()
    findings = [ok(AREA, f"token works: {me['username']} (id {me['id']})")]
    flags = discord.ApplicationFlags._from_value(int(info.get("flags") or 0))
    if flags.gateway_message_content or flags.gateway_message_content_limited:
        findings.append(ok(AREA, "the Message Content intent is enabled"))
    else:
        findings.append(
            fix(
                AREA,
                "the Message Content intent is off: developer portal → Bot → Privileged Gateway "
                "Intents → Message Content Intent",
            )
        )
    return findings

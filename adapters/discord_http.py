"""Discord's HTTP side we watch: discord.py sleeps through 429s itself, so we count them."""

from __future__ import annotations

from typing import TYPE_CHECKING

import aiohttp

from compactbot.adapters.discord_gating import PLATFORM

if TYPE_CHECKING:
    from compactbot.bot.operators.metrics import Metrics

# Our own 429 handling only sees one without Discord's `Via` header (a Cloudflare limit).
TOO_MANY_REQUESTS = 429


def rate_limit_trace(metrics: Metrics) -> aiohttp.TraceConfig:
    """Count every 429 and its Retry-After: discord.py waits them out without telling us."""
    trace = aiohttp.TraceConfig()

    async def on_request_end(
        session: aiohttp.ClientSession,
        context: object,
        params: aiohttp.TraceRequestEndParams,
    ) -> None:
        if params.response.status == TOO_MANY_REQUESTS:
            seconds = _seconds(params.response.headers.get("Retry-After"))
            metrics.retry_after_waited(PLATFORM, seconds)

    trace.on_request_end.append(on_request_end)
    return trace


def _seconds(value: str | None) -> float:
    try:
        return max(float(value or 0), 0.0)
    except ValueError:
        return 0.0

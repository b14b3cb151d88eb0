"""The console put together from the running service's parts (bot.app calls `console_for`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from compactbot.bot.operators.console.auth import OperatorTokens
from compactbot.bot.operators.console.deps import ConsoleDeps, ModelFacts
from compactbot.bot.operators.console.sessions import SignIn
from compactbot.bot.operators.console.web import console_app
from compactbot.bot.operators.doctor_report import Finding, skip
from compactbot.bot.operators.health import Readiness
from compactbot.bot.services import Services
from compactbot.bot.store.base import StoreError

# `compactbot doctor`'s checks; the composition root hands them in (they import bot.app).
Doctor = Callable[[], Awaitable[list[Finding]]]


class ConsoleUnavailable(StoreError):
    """The configured store keeps no console records (a third-party backend)."""


async def console_for(
    services: Services,
    readiness: Readiness,
    model: ModelFacts,
    settings_changed: Callable[[str], Awaitable[None]],
    doctor: Doctor | None,
) -> web.Application:
    records = services.console_records
    if records is None:
        raise ConsoleUnavailable("the configured store keeps no console sessions or audit log")
    config = services.config
    tokens = OperatorTokens.from_config(config.console)
    sign_in = SignIn(records, services.shared_limits, tokens, config.console, services.clock)
    deps = ConsoleDeps(
        services=services,
        records=records,
        sign_in=sign_in,
        readiness=readiness,
        model=model,
        settings_changed=settings_changed,
        doctor=doctor or _no_doctor,
        trusted_proxies=frozenset(config.console.trusted_proxies),
    )
    return await console_app(deps)


async def _no_doctor() -> list[Finding]:
    return [skip("doctor", "not available in this process")]

"""`compactbot doctor`: check the configuration, store, model endpoint and platforms, one line each.

Platform checks live with their adapters and are found through the `compactbot.doctor_checks`
entry-point group, so `bot/` imports no adapter.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Iterable
from importlib.metadata import entry_points
from typing import TextIO

from compactbot.bot.operators.doctor_llm import check_llm
from compactbot.bot.operators.doctor_report import Finding, NamedCheck, fix, ok, skip
from compactbot.bot.operators.doctor_store import check_store
from compactbot.bot.settings.config import Config

ENTRY_POINT_GROUP = "compactbot.doctor_checks"
# Each check's whole budget: a few HTTP round trips, or one tiny completion with --live.
CHECK_TIMEOUT_SECONDS = 30.0
PROBLEM_EXIT_STATUS = 1


def builtin_checks() -> list[NamedCheck]:
    return [
        NamedCheck("config", check_config),
        NamedCheck("store", check_store),
        NamedCheck("llm", check_llm),
    ]


def platform_checks() -> list[NamedCheck]:
    return [
        NamedCheck(ep.name, ep.load())
        for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name)
    ]


async def run_doctor(
    config: Config,
    *,
    live: bool = False,
    checks: Iterable[NamedCheck] | None = None,
    out: TextIO | None = None,
) -> int:
    """Print every finding; 0 only when nothing needs fixing."""
    out = out or sys.stdout
    findings: list[Finding] = []
    for check in _chosen(checks):
        for finding in await _run_one(check, config, live):
            findings.append(finding)
            print(finding.line(), file=out)
    problems = sum(f.status == "fix" for f in findings)
    print(f"{problems} problem(s) found" if problems else "all is well", file=out)
    return PROBLEM_EXIT_STATUS if problems else 0


def doctor_for(config: Config) -> Callable[[], Awaitable[list[Finding]]]:
    """The checks without --live, for the web console's health page."""

    async def run() -> list[Finding]:
        return await collect_findings(config)

    return run


async def collect_findings(
    config: Config, *, live: bool = False, checks: Iterable[NamedCheck] | None = None
) -> list[Finding]:
    """Every check's findings, in order (the operator console shows them)."""
    findings: list[Finding] = []
    for check in _chosen(checks):
        findings.extend(await _run_one(check, config, live))
    return findings


def _chosen(checks: Iterable[NamedCheck] | None) -> list[NamedCheck]:
    return list(checks) if checks is not None else builtin_checks() + platform_checks()


async def _run_one(check: NamedCheck, config: Config, live: bool) -> list[Finding]:
    try:
        return await asyncio.wait_for(check.run(config, live), CHECK_TIMEOUT_SECONDS)
    except TimeoutError:
        return [fix(check.area, f"no answer within {CHECK_TIMEOUT_SECONDS:.0f}s")]
    except Exception as exc:
        # A check that crashes is itself something to fix, and must not hide the others.
        return [fix(check.area, f"the check itself failed ({type(exc).__name__})")]


async def check_config(config: Config, live: bool) -> list[Finding]:
    """The file and environment already validated; say what they add up to."""
    findings = [ok("config", "settings valid")]
    if config.telegram.token is None and config.discord.token is None:
        findings.append(
            skip("config", "no TELEGRAM_BOT_TOKEN or DISCORD_BOT_TOKEN: `run` opens the console")
        )
    webhook = config.telegram.webhook_url
    if webhook is not None and not webhook.startswith("https://"):
        findings.append(fix("config", "TELEGRAM_WEBHOOK_URL must be https:// (Telegram's rule)"))
    if config.metrics.listen is None:
        findings.append(skip("config", "COMPACTBOT_METRICS_LISTEN unset: no /metrics or /readyz"))
    return findings

"""What the console's pages are given: the running service's parts, nothing global."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from compactbot.bot.operators.console.sessions import SignIn, Viewer
from compactbot.bot.operators.doctor_report import Finding
from compactbot.bot.operators.health import Readiness
from compactbot.bot.services import Services
from compactbot.bot.settings.config import Config
from compactbot.bot.store.protocols.console_records import AuditEntry, ConsoleRecords


class ModelFacts(Protocol):
    """The model as the running service found it at start-up (bot.app.ModelInfo)."""

    @property
    def name(self) -> str: ...
    @property
    def offline(self) -> bool: ...
    @property
    def context_length(self) -> int: ...
    @property
    def context_source(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ConsoleDeps:
    # The pages read and change the store through its views (`services.transcript`, …).
    services: Services
    records: ConsoleRecords
    sign_in: SignIn
    readiness: Readiness
    model: ModelFacts
    # The gateway's hook after a settings change (caches, the system prompt), as /config calls it.
    settings_changed: Callable[[str], Awaitable[None]]
    # `compactbot doctor`'s checks without --live.
    doctor: Callable[[], Awaitable[list[Finding]]]
    trusted_proxies: frozenset[str]

    @property
    def config(self) -> Config:
        return self.services.config

    def now(self) -> float:
        return self.services.clock()

    async def audit(self, viewer: Viewer, action: str, detail: str, chat_key: str) -> None:
        """Write who changed what in which chat to the audit table, now."""
        entry = AuditEntry(self.now(), viewer.who, viewer.role, action, detail, chat_key)
        await self.records.record_audit(entry)

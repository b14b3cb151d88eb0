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
from compactbot.bot.store.chat_store import ChatStore
from compactbot.bot.store.console_records import AuditEntry, ConsoleRecords
from compactbot.bot.store.event_store import CompressionEventStore
from compactbot.bot.store.forget_store import ForgetStore
from compactbot.bot.store.pin_store import PinStore
from compactbot.bot.store.session_store import SessionStore
from compactbot.bot.store.settings_store import SettingsStore
from compactbot.bot.store.shared_limits import SharedLimits
from compactbot.bot.store.transcript_store import TranscriptReads
from compactbot.bot.store.usage_store import UsageStore


class ConsoleStore(
    ChatStore,
    SessionStore,
    TranscriptReads,
    PinStore,
    CompressionEventStore,
    UsageStore,
    SettingsStore,
    ForgetStore,
    SharedLimits,
    Protocol,
):
    """What the pages show, and what they change through this store: settings, and the
    forgetting a purge asks for."""


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
    services: Services
    # The one store, as what the pages read and change (bot.app hands it in).
    store: ConsoleStore
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

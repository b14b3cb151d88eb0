"""The service's shared parts and the per-chat views built from them."""

from __future__ import annotations

import enum
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from compactbot.bot.compaction.session_compactor import (
    SessionCompactor,
    SummarizerFactory,
    UsageSink,
)
from compactbot.bot.llm.client import LLMClient
from compactbot.bot.llm.metering import Meter
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.settings import chat_settings
from compactbot.bot.settings.chat_settings import ChatSettings
from compactbot.bot.settings.config import Config
from compactbot.bot.store.backends import Store
from compactbot.bot.store.postgres.store import PostgresStore
from compactbot.bot.store.protocols.chat_store import ChatStore
from compactbot.bot.store.protocols.console_records import ConsoleRecords
from compactbot.bot.store.protocols.dead_letters import DeadLetterStore
from compactbot.bot.store.protocols.dedup_store import DedupStore
from compactbot.bot.store.protocols.event_store import CompressionEventStore
from compactbot.bot.store.protocols.forget_store import ForgetStore
from compactbot.bot.store.protocols.lock_store import LockStore
from compactbot.bot.store.protocols.pin_store import PinStore
from compactbot.bot.store.protocols.revision_store import RevisionStore
from compactbot.bot.store.protocols.session_store import SessionStore
from compactbot.bot.store.protocols.settings_store import SettingsStore
from compactbot.bot.store.protocols.shared_limits import SharedLimits
from compactbot.bot.store.protocols.transcript_store import TranscriptReads, TranscriptWrites
from compactbot.bot.store.protocols.usage_store import UsageStore
from compactbot.bot.turns.prompt import build_system_prompt
from compactbot.bot.turns.runner import AgentRunner
from compactbot.bot.workers.leadership import Leadership, SoleLeader
from compactbot.compression import CompressorConfig
from compactbot.compression.summarizer import Summarizer
from compactbot.compression.tokens import TokenCounter


class _Parent(enum.Enum):
    LOOK_UP = "look up"


# "Read the chat row to find its parent": callers that know the parent pass it (or None).
LOOK_UP_PARENT = _Parent.LOOK_UP
RESOLVED_CACHE_MAX_CHATS = 100_000  # bounds memory like the raw settings cache


@dataclass(frozen=True, slots=True)
class _Resolved:
    raw: dict[str, str]
    parent_raw: dict[str, str] | None
    config: Config
    settings: ChatSettings


@dataclass(slots=True)
class Services:
    """Everything a request handler needs, created once at start-up by `bot.app`.

    Handlers reach the store through the views below, each typed as the one protocol it
    holds, so mypy checks every call against that protocol. `store` itself is for the
    composition root (tests/structure/test_store_protocols.py)."""

    config: Config
    store: Store
    counter: TokenCounter
    llm: LLMClient
    compactor: SessionCompactor
    context_length: int
    meter: Meter  # the budgets every model call is checked against (SPEC 17)
    clock: Callable[[], float] = time.time
    # Set when the summary model's window is smaller than the compaction threshold (SPEC 6.10).
    threshold_tokens_cap: int | None = None
    runner: AgentRunner | None = None
    # Summaries outside compaction (/summary); None or a None result: the deterministic path.
    summarizer_factory: SummarizerFactory | None = None
    # Windows of the models chats may pick (model.allowed_models), found at start-up.
    model_windows: dict[str, int] = field(default_factory=dict)
    # Who runs the overnight job among workers on one database (SPEC 15); one process leads.
    leadership: Leadership = field(default_factory=SoleLeader)
    # Per chat: the raw values and config its settings were resolved from, and the result.
    _resolved: dict[str, _Resolved] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.runner is None:
            self.runner = AgentRunner(
                self.store, self.llm, self.compactor, self.counter, self.system_prompt_for
            )

    @property
    def chats(self) -> ChatStore:
        return self.store

    @property
    def sessions(self) -> SessionStore:
        return self.store

    @property
    def transcript(self) -> TranscriptReads:
        return self.store

    @property
    def transcript_writes(self) -> TranscriptWrites:
        return self.store

    @property
    def pins(self) -> PinStore:
        return self.store

    @property
    def stored_settings(self) -> SettingsStore:
        """The chats' own setting values; `settings_for` resolves them."""
        return self.store

    @property
    def locks(self) -> LockStore:
        return self.store

    @property
    def dedup(self) -> DedupStore:
        return self.store

    @property
    def compaction_events(self) -> CompressionEventStore:
        return self.store

    @property
    def usage(self) -> UsageStore:
        return self.store

    @property
    def dead_letters(self) -> DeadLetterStore:
        return self.store

    @property
    def revisions(self) -> RevisionStore:
        return self.store

    @property
    def forgetting(self) -> ForgetStore:
        return self.store

    @property
    def shared_limits(self) -> SharedLimits:
        return self.store

    @property
    def console_records(self) -> ConsoleRecords | None:
        """The console's sessions and audit log, when the backend keeps them."""
        return self.store if isinstance(self.store, ConsoleRecords) else None

    @property
    def postgres(self) -> PostgresStore | None:
        """The PostgreSQL backend (inbox, outbox, pacing) when the store is one."""
        return self.store if isinstance(self.store, PostgresStore) else None

    @property
    def metrics(self) -> Metrics:
        return self.compactor.metrics

    @property
    def agent(self) -> AgentRunner:
        assert self.runner is not None
        return self.runner

    def summarizer(self, usage: UsageSink) -> Summarizer | None:
        return self.summarizer_factory(usage) if self.summarizer_factory is not None else None

    async def raw_settings(
        self, chat_key: str, parent_key: str | _Parent | None = LOOK_UP_PARENT
    ) -> tuple[dict[str, str], dict[str, str] | None]:
        """The chat's stored values and, for a thread, its parent chat's.

        The ingress knows the parent (the platform says), which saves a chat lookup per message.
        """
        if parent_key is LOOK_UP_PARENT:
            chat = await self.chats.get_chat(chat_key)
            parent_key = chat.parent_key if chat is not None else None
        raw = await self.stored_settings.get_chat_settings(chat_key)
        parent_raw = None
        if isinstance(parent_key, str):
            parent_raw = await self.stored_settings.get_chat_settings(parent_key)
        return raw, parent_raw

    async def settings_for(
        self, chat_key: str, parent_key: str | _Parent | None = LOOK_UP_PARENT
    ) -> ChatSettings:
        """The chat's settings: its own values, else its parent chat's, else operator defaults."""
        raw, parent_raw = await self.raw_settings(chat_key, parent_key)
        # Resolving is a pure function of these three; comparing them is far cheaper than it,
        # and a changed value (a /config, another process's write) misses at once.
        cached = self._resolved.get(chat_key)
        if (
            cached is not None
            and cached.config is self.config
            and cached.raw == raw
            and cached.parent_raw == parent_raw
        ):
            return cached.settings
        settings = chat_settings.resolve(raw, parent_raw, self.config)
        if len(self._resolved) >= RESOLVED_CACHE_MAX_CHATS:
            self._resolved.clear()
        self._resolved[chat_key] = _Resolved(raw, parent_raw, self.config, settings)
        return settings

    def window_for(self, settings: ChatSettings) -> int:
        """The context window of the chat's model: thresholds and budgets follow it."""
        if settings.model == self.config.model.name:
            return self.context_length
        return self.model_windows.get(settings.model, self.context_length)

    def model_for(self, settings: ChatSettings) -> str | None:
        """The chat's own model when it picked one, else None (the client's default)."""
        return None if settings.model == self.config.model.name else settings.model

    def compaction_settings(self, settings: ChatSettings) -> CompressorConfig:
        compression = self.config.compression
        return CompressorConfig(
            context_length=self.window_for(settings),
            threshold=settings.threshold,
            target_ratio=settings.target_ratio,
            protect_first_n=compression.protect_first_n,
            protect_last_n=settings.protect_last_n,
            max_tokens=self.config.model.max_tokens,
            abort_on_summary_failure=compression.abort_on_summary_failure,
            memory_cap_ratio=compression.memory_cap_ratio,
            threshold_tokens_cap=self.threshold_tokens_cap,
            language=None if settings.language == "auto" else settings.language,
        )

    async def system_prompt_for(self, chat_key: str) -> str:
        settings = await self.settings_for(chat_key)
        pins = [p.text for p in await self.pins.list_pins(chat_key)]
        return build_system_prompt(
            persona=self.config.gateway.persona,
            chat_instructions=settings.system_prompt,
            language=None if settings.language == "auto" else settings.language,
            pins=pins,
        )

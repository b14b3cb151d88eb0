"""Service assembly: config in, a running gateway (store, model, compactor, runner) out."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

import openai

from compactbot.bot.compaction.session_compactor import (
    SessionCompactor,
    SummarizerFactory,
    UsageSink,
)
from compactbot.bot.heap import freeze_startup_heap
from compactbot.bot.ingress.gateway import Gateway
from compactbot.bot.ingress.limits import chat_budgets
from compactbot.bot.llm.client import LLMClient
from compactbot.bot.llm.metering import Meter, metered, metered_summarizers
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.llm.stream import StreamingChatClient
from compactbot.bot.operators.console.assembly import Doctor, console_for
from compactbot.bot.operators.endpoint import OperatorEndpoint
from compactbot.bot.operators.health import QueueProbe, Readiness, StoreProbe
from compactbot.bot.operators.metrics import Metrics, QueueSample
from compactbot.bot.operators.views import ViewedStore
from compactbot.bot.services import Services
from compactbot.bot.settings.config import DEFAULT_CONTEXT_LENGTH, Config
from compactbot.bot.store.backends import Store, create_store, parse_store_url
from compactbot.bot.store.protocols.chat_store import ChatStore
from compactbot.bot.workers.leadership import leadership_for
from compactbot.compression import Summarizer, compute_threshold_tokens
from compactbot.compression.engine import check_summary_model_feasibility, load_engine
from compactbot.compression.openai_summarizer import OpenAISummarizer
from compactbot.compression.tokens import counter_for

log = logging.getLogger(__name__)

# Summaries are one long call; a dead endpoint should fail fast rather than hold the chat.
SUMMARY_CLIENT_RETRIES = 1


@dataclass(frozen=True, slots=True)
class ModelInfo:
    name: str
    offline: bool
    context_length: int
    context_source: str  # config | endpoint | default


def database_path(config: Config) -> str:
    """Where the store is, safe to show: the SQLite path, or the DSN without its password."""
    return parse_store_url(config.storage.database).shown


def endpoint_configured(config: Config) -> bool:
    return config.model.base_url is not None or config.model.api_key is not None


class App:
    """Owns the long-lived parts. `async with App(config) as app:` opens and closes them."""

    def __init__(
        self,
        config: Config,
        *,
        llm: LLMClient | None = None,
        store: Store | None = None,
        clock: Callable[[], float] = time.time,
        summarizer_factory: SummarizerFactory | None = None,
        gateway_factory: Callable[[Services], Gateway] = Gateway,
    ) -> None:
        self.config = config
        self._gateway_factory = gateway_factory
        self._llm = llm
        self._summarizers = summarizer_factory
        self._store = store
        self._clock = clock
        self._openai: openai.AsyncOpenAI | None = None
        self._endpoint: OperatorEndpoint | None = None
        self.metrics = Metrics(chat_labels=config.metrics.chat_labels)
        self.readiness = Readiness()
        self.services: Services
        self.gateway: Gateway
        self.model: ModelInfo

    async def __aenter__(self) -> App:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def start(self) -> None:
        config = self.config
        engine = load_engine(config.compression.context_engine)
        store = self._store or create_store(config.storage.database, clock=self._clock)
        await store.open()
        self._store = store
        store.observe_commits(self.metrics.store_committed)
        llm = self._llm or self._make_llm()
        self._llm = llm
        context_length, source = await self._context_length(llm)
        self.model = ModelInfo(llm.model, llm.offline, context_length, source)
        cap = await self._summary_model_cap(llm, context_length)
        counter = counter_for(None if llm.offline else llm.model)
        # Every model call is metered here, whichever path makes it (SPEC 17).
        meter = Meter(store, clock=self._clock, metrics=self.metrics)
        summarizers = metered_summarizers(self._summarizers or self._summarizer_factory(llm), meter)
        compactor = SessionCompactor(
            store,
            counter,
            summarizers,
            lock_ttl_seconds=config.compression.lock_ttl_seconds,
            clock=self._clock,
            engine=engine,
            metrics=self.metrics,
            meter=meter,
        )
        self.services = Services(
            config=config,
            store=store,
            counter=counter,
            llm=metered(llm, meter),
            compactor=compactor,
            context_length=context_length,
            meter=meter,
            clock=self._clock,
            threshold_tokens_cap=cap,
            summarizer_factory=summarizers,
            model_windows=await self._model_windows(llm, context_length),
            # Not campaigning yet: the overnight scheduler starts it, so CLI commands never lead.
            leadership=leadership_for(store),
        )
        meter.budgets = chat_budgets(self.services)
        self.gateway = self._gateway_factory(self.services)
        await self._watch(store)
        # A lease left by a crashed process would hold every compaction of its session.
        await compactor.leases.reclaim_dead()
        freeze_startup_heap()
        log.info(
            "compactbot ready: model=%s (%s) window=%d (%s) db=%s",
            self.model.name,
            "offline" if llm.offline else "endpoint",
            context_length,
            source,
            database_path(config),
        )

    @property
    def reports(self) -> ViewedStore:
        """The store as the operator's report commands read it (`chats --top`, `events`)."""
        return self.services.store

    async def start_operator_endpoint(self, *, doctor: Doctor | None = None) -> None:
        """Serve /metrics, /healthz and /readyz when COMPACTBOT_METRICS_LISTEN is set, and the
        web console when it is enabled (on 127.0.0.1 unless told otherwise); `doctor` runs
        `compactbot doctor`'s checks for the console's health page."""
        listen = self.config.operator_listen
        if listen is None or self._endpoint is not None:
            return
        host, _, port = listen.rpartition(":")
        console = None
        if self.config.console.enabled:
            console = await console_for(
                self.services,
                self.readiness,
                self.model,
                self.gateway.settings_changed,
                doctor,
            )
        endpoint = OperatorEndpoint(
            host.strip("[]"), int(port), self.metrics, self.readiness, console=console
        )
        await endpoint.start()
        self._endpoint = endpoint

    async def close(self) -> None:
        if self._endpoint is not None:
            await self._endpoint.stop()
            self._endpoint = None
        if hasattr(self, "gateway"):
            await self.gateway.close()
        if hasattr(self, "services"):
            await self.services.leadership.stop()
        close_llm = getattr(self._llm, "aclose", None)
        if close_llm is not None:
            await close_llm()
        if self._openai is not None:
            await self._openai.close()
        if self._store is not None:
            await self._store.close()

    async def _watch(self, store: ChatStore) -> None:
        lanes = self.gateway.lanes
        self.metrics.watch_queue(
            lambda: QueueSample(lanes.queued_jobs, lanes.oldest_wait_seconds())
        )
        path = database_path(self.config)
        store_probe = StoreProbe(store, None if path == ":memory:" else path)
        await store_probe.remember_file()
        self.readiness.add(store_probe)
        self.readiness.add(QueueProbe(lanes))

    def _make_llm(self) -> LLMClient:
        model = self.config.model
        if not endpoint_configured(self.config):
            return OfflineModel()
        return StreamingChatClient(
            api_key=_secret(model.api_key) or "not-needed",
            base_url=model.base_url,
            model=model.name,
            timeout_seconds=model.request_timeout_seconds,
            max_retries=model.max_retries,
            deadline_seconds=model.reply_deadline_seconds,
        )

    async def _context_length(self, llm: LLMClient) -> tuple[int, str]:
        configured = self.config.model.context_length
        if configured:
            return configured, "config"
        fetch = getattr(llm, "fetch_context_length", None)
        if fetch is not None:
            reported = await fetch()
            if reported:
                return int(reported), "endpoint"
        log.info("context window unknown; assuming %d tokens", DEFAULT_CONTEXT_LENGTH)
        return DEFAULT_CONTEXT_LENGTH, "default"

    async def _model_windows(self, llm: LLMClient, default: int) -> dict[str, int]:
        """Each allowed model's window: configured, else reported by the endpoint, else ours."""
        model = self.config.model
        fetch = getattr(llm, "fetch_context_length", None)
        windows: dict[str, int] = {}
        for name in model.allowed_models:
            window = model.context_lengths.get(name)
            if window is None and fetch is not None and not llm.offline:
                window = await fetch(name)
            windows[name] = int(window or default)
            log.info("model %s may be chosen per chat (window %d)", name, windows[name])
        return windows

    async def _summary_model_cap(self, llm: LLMClient, context_length: int) -> int | None:
        """Lower the threshold once, with a warning, when the summary model's window is smaller."""
        summary_model = self.config.model.summary_model
        fetch = getattr(llm, "fetch_context_length", None)
        if llm.offline or not summary_model or summary_model == llm.model or fetch is None:
            return None
        window = await fetch(summary_model)
        if not window:
            return None
        main = compute_threshold_tokens(
            context_length, self.config.compression.threshold, self.config.model.max_tokens
        )
        threshold, warning = check_summary_model_feasibility(main, int(window))
        if warning:
            log.warning(warning)
            return threshold
        return None

    def _summarizer_factory(self, llm: LLMClient) -> SummarizerFactory:
        if llm.offline:
            return lambda _sink: None
        model = self.config.model
        self._openai = openai.AsyncOpenAI(
            api_key=_secret(model.api_key) or "not-needed",
            base_url=model.base_url,
            max_retries=SUMMARY_CLIENT_RETRIES,
            timeout=model.summary_timeout_seconds,
        )
        client = self._openai
        summary_model = model.summary_model or model.name

        def factory(sink: UsageSink) -> Summarizer:
            return OpenAISummarizer(
                client,
                summary_model,
                fallback_model=model.name if summary_model != model.name else None,
                timeout_seconds=model.summary_timeout_seconds,
                on_usage=sink,
            )

        return factory


def _secret(value: object) -> str | None:
    getter = getattr(value, "get_secret_value", None)
    return getter() if getter is not None else None

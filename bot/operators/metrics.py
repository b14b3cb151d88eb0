"""Prometheus metrics: one registry per App, and the one-line calls the pipeline makes into it.

Labels carry platforms, triggers and outcomes, never chat text or user names; chat keys appear
only in the `compactbot_chat_*` families, and only when the operator turns them on.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from compactbot.bot.compaction.report import CHANGED_OUTCOMES
from compactbot.bot.store.base import CompressionEvent
from compactbot.compression.state import CompressorState

PREFIX = "compactbot"
# A turn spans hygiene, tool rounds and model retries: seconds to several minutes.
TURN_BUCKETS_SECONDS = (0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300)
LLM_BUCKETS_SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120)
COMPACTION_BUCKETS_SECONDS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 120, 300)
# SQLite commits take well under a millisecond to a few; a busy writer can queue for seconds.
COMMIT_BUCKETS_SECONDS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1, 5)


@dataclass(frozen=True, slots=True)
class QueueSample:
    """What a queue reports: the lane scheduler at scrape time, the shared queue when sampled."""

    depth: int
    oldest_wait_seconds: float


QueueSource = Callable[[], QueueSample]


class Metrics:
    """Owns every metric object; a fresh instance has its own registry (tests stay isolated)."""

    def __init__(
        self,
        *,
        chat_labels: bool = False,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.registry = CollectorRegistry()
        self.chat_labels = chat_labels
        # Each worker serves its own endpoint; the host name tells them apart on a dashboard.
        self.worker = socket.gethostname()
        self.clock = clock
        r = self.registry
        self.received = Counter(
            f"{PREFIX}_messages_received", "New inbound messages.", ["platform"], registry=r
        )
        self._received_by_platform: dict[str, Counter] = {}
        self.answered = Counter(
            f"{PREFIX}_messages_answered", "Turns that produced a reply.", ["platform"], registry=r
        )
        self.turn_seconds = Histogram(
            f"{PREFIX}_turn_seconds",
            "From a turn leaving its chat's queue to its reply being sent.",
            ["platform", "outcome"],
            buckets=TURN_BUCKETS_SECONDS,
            registry=r,
        )
        self.llm_seconds = Histogram(
            f"{PREFIX}_llm_request_seconds",
            "One model call, retries included.",
            ["purpose", "outcome"],
            buckets=LLM_BUCKETS_SECONDS,
            registry=r,
        )
        self.compactions = Counter(
            f"{PREFIX}_compactions", "Compaction attempts.", ["trigger", "outcome"], registry=r
        )
        self.compaction_seconds = Histogram(
            f"{PREFIX}_compaction_seconds",
            "Compaction duration, lock to event row.",
            ["trigger"],
            buckets=COMPACTION_BUCKETS_SECONDS,
            registry=r,
        )
        self.tokens_before = Counter(
            f"{PREFIX}_compaction_tokens_before",
            "Active tokens before compactions that changed the transcript.",
            ["trigger"],
            registry=r,
        )
        self.tokens_after = Counter(
            f"{PREFIX}_compaction_tokens_after",
            "Active tokens after compactions that changed the transcript.",
            ["trigger"],
            registry=r,
        )
        self.summary_tokens = Counter(
            f"{PREFIX}_compaction_summary_tokens",
            "Tokens of the summaries written.",
            ["trigger"],
            registry=r,
        )
        self.breaker_pauses = Counter(
            f"{PREFIX}_breaker_pauses", "Automatic compaction paused by the breaker.", registry=r
        )
        self.cooldowns = Counter(
            f"{PREFIX}_summary_cooldowns",
            "Summary cooldowns armed after a summarizer failure.",
            registry=r,
        )
        self.send_failures = Counter(
            f"{PREFIX}_send_failures",
            "Replies the platform would not take.",
            ["platform"],
            registry=r,
        )
        self.sends_unknown = Counter(
            f"{PREFIX}_sends_unknown",
            "Replies whose worker died mid-send: maybe delivered, never repeated.",
            ["platform"],
            registry=r,
        )
        self.retry_after_waits = Counter(
            f"{PREFIX}_retry_after_waits", "Flood-control waits obeyed.", ["platform"], registry=r
        )
        self.retry_after_seconds = Counter(
            f"{PREFIX}_retry_after_wait_seconds",
            "Seconds spent in flood-control waits.",
            ["platform"],
            registry=r,
        )
        self.commit_seconds = Histogram(
            f"{PREFIX}_store_commit_seconds",
            "Store write transactions, waiting for the writer included.",
            buckets=COMMIT_BUCKETS_SECONDS,
            registry=r,
        )
        self.queue_depth = Gauge(
            f"{PREFIX}_queue_depth", "Jobs waiting in chat queues.", ["worker"], registry=r
        )
        self.queue_oldest = Gauge(
            f"{PREFIX}_queue_oldest_seconds",
            "Age of the oldest job waiting in a chat queue.",
            ["worker"],
            registry=r,
        )
        self.inbox_depth = Gauge(
            f"{PREFIX}_inbox_depth",
            "Jobs not yet done in the shared queue, of the platforms this worker serves.",
            registry=r,
        )
        self.inbox_oldest = Gauge(
            f"{PREFIX}_inbox_oldest_seconds",
            "Age of the oldest of those jobs.",
            registry=r,
        )
        self.limit_refusals = Counter(
            f"{PREFIX}_limit_refusals",
            "Messages or model calls a limit refused (member_rate, chat_rate, chat_budget,"
            " member_budget, global_budget).",
            ["limit"],
            registry=r,
        )
        self.metered_tokens = Counter(
            f"{PREFIX}_metered_tokens",
            "Prompt + completion tokens of every model call, by purpose.",
            ["purpose"],
            registry=r,
        )
        self.chat_received = Counter(
            f"{PREFIX}_chat_messages_received", "Per chat (opt-in).", ["chat"], registry=r
        )
        self.chat_compactions = Counter(
            f"{PREFIX}_chat_compactions", "Per chat (opt-in).", ["chat", "outcome"], registry=r
        )

    def render(self) -> bytes:
        """The text exposition format, for GET /metrics."""
        return generate_latest(self.registry)

    def watch_queue(self, source: QueueSource) -> None:
        """Sample queue depth and the oldest wait at scrape time, not on every submit."""
        self.queue_depth.labels(self.worker).set_function(lambda: source().depth)
        self.queue_oldest.labels(self.worker).set_function(lambda: source().oldest_wait_seconds)

    def inbox_sampled(self, sample: QueueSample) -> None:
        self.inbox_depth.set(sample.depth)
        self.inbox_oldest.set(sample.oldest_wait_seconds)

    # --- the calls the pipeline makes -----------------------------------------------------

    def message_received(self, platform: str, chat_key: str) -> None:
        # Once per inbound message: the labelled child is looked up once per platform.
        child = self._received_by_platform.get(platform)
        if child is None:
            child = self._received_by_platform[platform] = self.received.labels(platform)
        child.inc()
        if self.chat_labels:
            self.chat_received.labels(chat_key).inc()

    def turn_started(self, platform: str) -> TurnTimer:
        return TurnTimer(self, platform, self.clock())

    @contextlib.contextmanager
    def llm_timer(self, purpose: str) -> Iterator[None]:
        """Time one model call (`reply` or `summary`); an exception counts it as an error."""
        started = self.clock()
        outcome = "error"
        try:
            yield
            outcome = "ok"
        finally:
            self.llm_seconds.labels(purpose, outcome).observe(self.clock() - started)

    def compaction_recorded(self, event: CompressionEvent) -> None:
        trigger = event.trigger
        self.compactions.labels(trigger, event.outcome).inc()
        self.compaction_seconds.labels(trigger).observe(max(event.ended_at - event.started_at, 0))
        if event.outcome in CHANGED_OUTCOMES:
            self.tokens_before.labels(trigger).inc(event.tokens_before)
            self.tokens_after.labels(trigger).inc(event.tokens_after)
            self.summary_tokens.labels(trigger).inc(event.summary_tokens)
        if self.chat_labels:
            self.chat_compactions.labels(event.chat_key, event.outcome).inc()

    def compressor_changed(self, before: CompressorState, after: CompressorState) -> None:
        """Count a breaker pause or a summary cooldown that this state change started."""
        if after.pause_until > before.pause_until:
            self.breaker_pauses.inc()
        if after.cooldown_until > before.cooldown_until:
            self.cooldowns.inc()

    def limit_refused(self, limit: str) -> None:
        self.limit_refusals.labels(limit).inc()

    def tokens_metered(self, purpose: str, tokens: int) -> None:
        self.metered_tokens.labels(purpose).inc(max(tokens, 0))

    def breaker_paused(self) -> None:
        self.breaker_pauses.inc()

    def send_failed(self, platform: str) -> None:
        self.send_failures.labels(platform).inc()

    def send_unknown(self, platform: str) -> None:
        self.sends_unknown.labels(platform).inc()

    def retry_after_waited(self, platform: str, seconds: float) -> None:
        self.retry_after_waits.labels(platform).inc()
        self.retry_after_seconds.labels(platform).inc(max(seconds, 0.0))

    def store_committed(self, seconds: float) -> None:
        self.commit_seconds.observe(seconds)


@dataclass(slots=True)
class TurnTimer:
    """Started when a turn leaves its queue; `finished` records latency and the outcome."""

    metrics: Metrics
    platform: str
    started: float

    def finished(self, *, answered: bool) -> None:
        metrics = self.metrics
        seconds = metrics.clock() - self.started
        metrics.turn_seconds.labels(self.platform, "answered" if answered else "failed").observe(
            seconds
        )
        if answered:
            metrics.answered.labels(self.platform).inc()

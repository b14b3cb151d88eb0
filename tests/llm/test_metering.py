"""The one metering point: each call checked before it is made and charged after it."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from compactbot.bot.llm.metering import (
    BudgetExhausted,
    DailyBudgets,
    Meter,
    SummaryBudgetExhausted,
    UsageSink,
    metered,
    metered_summarizers,
    spending_for,
)
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.operators.metrics import Metrics
from compactbot.bot.store import SqliteStore
from compactbot.bot.store.backends import Store
from compactbot.compression.summarizer import SummaryRequest

NOW = dt.datetime(2026, 6, 1, 22, 30, tzinfo=dt.UTC).timestamp()
DAY = "2026-06-01"
REQUEST = SummaryRequest(turns=(), previous_summary=None, focus_topic=None, budget_tokens=100,
                         today=dt.date(2026, 6, 1))  # fmt: skip


class TwoCallSummarizer:
    """A summary that took two model calls (the summary model, then its fallback)."""

    def __init__(self, sink: UsageSink) -> None:
        self.sink = sink
        self.calls = 0

    async def summarize(self, request: SummaryRequest) -> str:
        self.calls += 1
        self.sink("summary-model", 300, 0)
        self.sink("fallback-model", 700, 40)
        return "summary"


async def budgets(_chat_key: str) -> DailyBudgets:
    return DailyBudgets(chat=1_000, member=0, total=0)


def meter_for(store: Store) -> Meter:
    meter = Meter(store, clock=lambda: NOW, metrics=Metrics())
    meter.budgets = budgets
    return meter


async def test_a_summary_is_charged_every_call_it_made_then_refused_past_the_budget(
    tmp_path: Path,
) -> None:
    async with SqliteStore(tmp_path / "m.db", clock=lambda: NOW) as store:
        await store.upsert_chat("test:g1", "test")
        built: list[TwoCallSummarizer] = []
        heard: list[tuple[str, int, int]] = []

        def factory(sink: UsageSink) -> TwoCallSummarizer:
            built.append(TwoCallSummarizer(sink))
            return built[-1]

        summarizer = metered_summarizers(factory, meter_for(store))(
            lambda *call: heard.append(call)
        )
        assert summarizer is not None
        with spending_for("test:g1", None, "compression"):
            assert await summarizer.summarize(REQUEST) == "summary"
            with pytest.raises(SummaryBudgetExhausted):
                await summarizer.summarize(REQUEST)

        assert built[0].calls == 1  # the second summary never reached the model
        assert len(heard) == 2  # the caller's own sink still hears each call
        [row] = await store.usage("test:g1", DAY)
        assert (row.purpose, row.calls, row.prompt_tokens, row.completion_tokens) == (
            "compression", 2, 1_000, 40
        )  # fmt: skip


async def test_a_spent_budget_refuses_the_call_and_says_when_it_resets(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "m.db", clock=lambda: NOW) as store:
        await store.upsert_chat("test:g1", "test")
        await store.add_usage("test:g1", "bob", "reply", 1_000, 0, day=DAY)
        llm = metered(OfflineModel(), meter_for(store))
        with spending_for("test:g1", "bob", "reply"), pytest.raises(BudgetExhausted) as refused:
            await llm.complete([{"role": "user", "content": "hi"}])
        assert refused.value.exhausted.limit == "chat_budget"
        assert refused.value.exhausted.seconds_left == 90 * 60
        with spending_for("test:other", "bob", "reply"):
            await llm.complete([{"role": "user", "content": "hi"}])  # another chat's budget


async def test_each_call_is_timed_by_purpose_and_outcome_in_the_metrics(tmp_path: Path) -> None:
    async with SqliteStore(tmp_path / "m.db", clock=lambda: NOW) as store:
        await store.upsert_chat("test:g1", "test")
        metrics = Metrics()
        meter = Meter(store, clock=lambda: NOW, metrics=metrics)
        meter.budgets = budgets
        llm = metered(OfflineModel(), meter)
        summarizer = metered_summarizers(TwoCallSummarizer, meter)(lambda *call: None)
        assert summarizer is not None
        with spending_for("test:g1", None, "reply"):
            await llm.complete([{"role": "user", "content": "hi"}])
            await summarizer.summarize(REQUEST)  # 1,000 + 40 tokens: the budget is spent
            with pytest.raises(BudgetExhausted):  # refused before the call: not timed
                await llm.complete([{"role": "user", "content": "hi"}])

        def observed(purpose: str, outcome: str) -> float:
            value = metrics.registry.get_sample_value(
                "compactbot_llm_request_seconds_count", {"purpose": purpose, "outcome": outcome}
            )
            return value or 0.0

        assert (observed("reply", "ok"), observed("summary", "ok")) == (1.0, 1.0)
        assert observed("reply", "error") == 0.0

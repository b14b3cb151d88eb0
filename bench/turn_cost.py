"""An answered turn's own cost (everything but the LLM) as the active transcript grows.

`AgentRunner.run_turn` on a real SqliteStore pre-filled with N active rows, compression off (the
turn is not compacting), with an LLM stub that answers at once and whose own time is subtracted.
The first turn after start-up reads the transcript into the working set; the later ones are
what every answered message costs.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.hermes_chat import hermes_chat
from bench.report import Section, loglog_slope, ms, quantile, table
from compactbot.bot.compaction.session_compactor import SessionCompactor
from compactbot.bot.llm.client import LLMResponse
from compactbot.bot.store import SqliteStore
from compactbot.bot.store.base import NewMessage
from compactbot.bot.turns.runner import AgentRunner, TurnRequest
from compactbot.bot.turns.working_set import WorkingSet
from compactbot.compression import CompressorConfig
from compactbot.compression.tokens import counter_for

SIZES = (1_000, 5_000, 50_000)
TARGET_SECONDS = 0.001
FILL_CHUNK_ROWS = 2_000


class _InstantLLM:
    """Answers at once and keeps the time spent inside it, so the turn's own cost is left."""

    model = "bench-instant"
    offline = False

    def __init__(self) -> None:
        self.seconds = 0.0

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        model: str | None = None,
    ) -> LLMResponse:
        begin = time.perf_counter()
        response = LLMResponse("ok", (), prompt_tokens=1_000, completion_tokens=2, model=self.model)
        self.seconds += time.perf_counter() - begin
        return response


@dataclass(slots=True)
class Results:
    first: dict[int, float] = field(default_factory=dict)
    turns: dict[int, list[float]] = field(default_factory=dict)
    loads: dict[int, int] = field(default_factory=dict)


async def measure(results: Results, directory: Path, *, turns: int) -> None:
    counter = counter_for(None)
    for size in SIZES:
        async with SqliteStore(directory / f"turns-{size}.db") as store:
            session = await store.active_session(f"bench:turns-{size}")
            rows = [
                NewMessage.from_openai(m, counter.count_message(m))
                for m in hermes_chat(size + 1)[1:]
            ]
            for begin in range(0, len(rows), FILL_CHUNK_ROWS):
                await store.append_batch([(session.id, rows[begin : begin + FILL_CHUNK_ROWS])])
            # The fill arrives at once; rows that came one by one would long since be indexed
            # for search, so the turns do not share the writer with that catch-up.
            await store.index_pending()
            llm = _InstantLLM()
            working_set = WorkingSet(store)
            compactor = SessionCompactor(store, counter, lambda _usage: None)
            runner = AgentRunner(store, llm, compactor, counter, _prompt, working_set)
            times = []
            for turn in range(turns + 1):
                (anchor,) = await store.append_messages(
                    session.id,
                    [NewMessage(role="user", content=f"[Ann] question {turn}", tokens=8)],
                )
                llm.seconds = 0.0
                begin = time.perf_counter()
                result = await runner.run_turn(_request(session.id, anchor))
                elapsed = time.perf_counter() - begin - llm.seconds
                assert result.reply == "ok", result
                if turn == 0:
                    results.first[size] = elapsed
                else:
                    times.append(elapsed)
            results.turns[size] = times
            results.loads[size] = working_set.loads


async def _prompt(_chat_key: str) -> str:
    return "You are a helpful bot in a group chat."


def _request(session_id: int, anchor: int) -> TurnRequest:
    return TurnRequest(
        session_id=session_id,
        chat_key="bench:turns",
        anchor_id=anchor,
        author_id="ann",
        author_name="Ann",
        can_remember=False,
        settings=CompressorConfig(context_length=200_000),
        compression_enabled=False,
    )


def render(results: Results) -> list[str]:
    s = Section("")
    s.add(
        "An answered turn's own cost: `AgentRunner.run_turn` with compression off, on a real "
        "SqliteStore holding N active rows, an LLM stub answering at once (its time "
        "subtracted). Every turn stores its question first (outside the timing, as the "
        "gateway does); the first turn after start-up reads the transcript into the working "
        "set and is shown apart.",
        "",
    )
    rows = []
    for size, times in results.turns.items():
        rows.append(
            [
                f"{size:,}",
                len(times),
                ms(statistics.median(times)),
                ms(quantile(times, 0.99)),
                ms(results.first[size]),
                results.loads[size],
            ]
        )
    s.add(
        *table(
            [
                "active rows",
                "turns",
                "p50",
                "p99",
                "first turn (reads the transcript)",
                "transcript reads",
            ],
            rows,
        )
    )
    return s.body


def targets(s: Section, results: Results) -> None:
    if not results.turns:
        return
    p50s = {n: statistics.median(t) for n, t in results.turns.items()}
    worst = max(p50s.values())
    slope = loglog_slope(list(p50s), list(p50s.values()))
    s.target(
        "Answered turn's own cost (everything but the LLM), p50 at 1K / 5K / 50K rows",
        "≤ 1 ms, flat",
        " / ".join(ms(p50s[n]) for n in sorted(p50s)) + f" (log-log slope {slope:.2f})",
        worst <= TARGET_SECONDS,
    )

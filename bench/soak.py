"""Soak: many chats at once through `gateway.handle`, a slow random LLM, compactions all along.

Checks that nothing is lost or duplicated, order holds per chat, every addressed message gets
its answer, idle lanes are released and memory stays bounded. `python -m bench.soak` runs it
alone (`make soak`); exit status 1 when an invariant breaks.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.chitchat import conversations
from bench.report import Section, ms, quantile, table
from bench.service import REPLY_TEXT, Adapter, FakeLLM, inbound, running_service
from bench.workloads import NAMES
from compactbot.bot.events import chat_key
from compactbot.bot.store.base import StoredMessage

CONTEXT_TOKENS = 4_000  # small on purpose: every chat compacts several times
MAX_LLM_LATENCY_SECONDS = 0.2
ADDRESSED_EVERY = 5
MESSAGE_CHARS = (200, 600)
RSS_SAMPLE_SECONDS = 0.25
# Growth allowed over the run: SQLite's page cache and the first-use imports, not a leak.
RSS_GROWTH_LIMIT_MB = 150.0
SEED = 2026


@dataclass(frozen=True, slots=True)
class Plan:
    chats: int
    per_chat: int


FULL = Plan(chats=200, per_chat=50)
QUICK = Plan(chats=40, per_chat=25)


@dataclass(slots=True)
class Outcome:
    plan: Plan
    wall: float = 0.0
    ingest: float = 0.0  # until the last message was handed to the gateway
    handle_latency: list[float] = field(default_factory=list)
    answer_latency: list[float] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    answered_twice: list[str] = field(default_factory=list)
    active_lanes: int = -1
    background_tasks: int = -1
    compactions: Counter[str] = field(default_factory=Counter)
    summary_calls: int = 0
    llm_calls: int = 0
    rows: int = 0
    rss_mb: list[float] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            not (self.lost or self.duplicated or self.out_of_order)
            and not (self.unanswered or self.answered_twice)
            and self.active_lanes == 0
            and self.background_tasks == 0
            and self.rss_growth_mb <= RSS_GROWTH_LIMIT_MB
        )

    @property
    def rss_growth_mb(self) -> float:
        return max(self.rss_mb) - self.rss_mb[0] if self.rss_mb else 0.0


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
    except OSError:
        return 0.0
    import resource

    return pages * resource.getpagesize() / 1e6


def _texts(plan: Plan) -> dict[int, list[str]]:
    """Per chat, its messages: real chitchat lines joined to group-chat length."""
    rng = random.Random(f"soak-texts:{SEED}")
    corpus = conversations()
    out: dict[int, list[str]] = {}
    for c in range(plan.chats):
        convo = corpus[rng.randrange(len(corpus))]
        lines = [text for _, text, _ in convo]
        messages = []
        for m in range(plan.per_chat):
            wanted = rng.randint(*MESSAGE_CHARS)
            parts: list[str] = []
            while sum(map(len, parts)) < wanted:
                parts.append(lines[rng.randrange(len(lines))])
            messages.append(f"(#{m}) " + " ".join(parts))
        out[c] = messages
    return out


async def soak(plan: Plan, directory: Path) -> Outcome:
    outcome = Outcome(plan)
    texts = _texts(plan)
    llm = FakeLLM(max_latency_seconds=MAX_LLM_LATENCY_SECONDS, seed=SEED)
    adapter = Adapter()
    addressed: dict[str, set[str]] = defaultdict(set)
    async with running_service(
        directory,
        context_length=CONTEXT_TOKENS,
        llm=llm,
        summary_latency_seconds=MAX_LLM_LATENCY_SECONDS,
        seed=SEED,
    ) as (app, endpoint):
        gateway = app.gateway
        outcome.rss_mb.append(_rss_mb())
        sampling = asyncio.create_task(_sample_rss(outcome))

        async def chat(c: int) -> None:
            people = NAMES[(c * 3) % 40 : (c * 3) % 40 + 6]
            for m, text in enumerate(texts[c]):
                message_id = str(m)
                is_addressed = m % ADDRESSED_EVERY == ADDRESSED_EVERY - 1
                message = inbound(
                    f"s{c}", people[m % len(people)], text, message_id, addressed=is_addressed
                )
                waiter = None
                if is_addressed:
                    addressed[f"s{c}"].add(message_id)
                    waiter = adapter.expect(f"s{c}", message_id)
                start = time.perf_counter()
                await gateway.handle(message, adapter)
                outcome.handle_latency.append(time.perf_counter() - start)
                if waiter is not None:
                    waiter.add_done_callback(
                        lambda f, s=start: outcome.answer_latency.append(f.result() - s)
                    )

        begin = time.perf_counter()
        await asyncio.gather(*(chat(c) for c in range(plan.chats)))
        outcome.ingest = time.perf_counter() - begin
        # Lanes and background compactions (hygiene may outlive the turn that waited for it).
        await gateway.join()
        outcome.wall = time.perf_counter() - begin
        sampling.cancel()
        outcome.rss_mb.append(_rss_mb())
        outcome.active_lanes = gateway.lanes.active_lanes
        outcome.background_tasks = int(gateway.compactions.busy)
        outcome.summary_calls = endpoint.calls
        outcome.llm_calls = llm.calls
        await _verify(app.services.store, plan, texts, addressed, adapter, outcome)
    return outcome


async def _sample_rss(outcome: Outcome) -> None:
    while True:
        await asyncio.sleep(RSS_SAMPLE_SECONDS)
        outcome.rss_mb.append(_rss_mb())


async def _verify(
    store: object,
    plan: Plan,
    texts: dict[int, list[str]],
    addressed: dict[str, set[str]],
    adapter: Adapter,
    outcome: Outcome,
) -> None:
    for c in range(plan.chats):
        chat_id = f"s{c}"
        history: list[StoredMessage] = await store.load_history(  # type: ignore[attr-defined]
            chat_key("bench", chat_id), include_archived=True
        )
        outcome.rows += len(history)
        _check_chat(chat_id, history, texts[c], outcome)
        for event in await store.list_compression_events(  # type: ignore[attr-defined]
            chat_key=chat_key("bench", chat_id), limit=1_000
        ):
            outcome.compactions[event.outcome] += 1
    answers: dict[str, list[str]] = defaultdict(list)
    for target, text, _ in adapter.sent:
        if text.startswith(REPLY_TEXT):
            answers[target.chat_id].append(target.reply_to_message_id or "")
    for chat_id, wanted in addressed.items():
        got = answers.get(chat_id, [])
        counts = Counter(got)
        outcome.unanswered += [f"{chat_id}#{m}" for m in sorted(wanted - set(got), key=int)]
        outcome.answered_twice += [f"{chat_id}#{m}" for m, n in counts.items() if n > 1]
        if [int(m) for m in got] != sorted(int(m) for m in got):
            outcome.out_of_order.append(f"{chat_id}: answers out of order")


def _check_chat(
    chat_id: str, history: Sequence[StoredMessage], sent: Sequence[str], outcome: Outcome
) -> None:
    """Every sent message stored once: one original row, plus only compaction copies of it."""
    users = [m for m in history if m.role == "user" and m.kind == "message"]  # in seq order
    summaries = sorted(m.id for m in history if m.kind == "summary")
    chains: dict[str, list[StoredMessage]] = defaultdict(list)
    for row in sorted(users, key=lambda r: r.id):
        chains[row.platform_message_id or "?"].append(row)
    for m, text in enumerate(sent):
        chain = chains.get(str(m), [])
        if not chain:
            outcome.lost.append(f"{chat_id}#{m}")
            continue
        if any(not row.text.endswith(text) for row in chain):
            outcome.lost.append(f"{chat_id}#{m} (text changed)")
        if not _is_copy_chain(chain, summaries):
            outcome.duplicated.append(f"{chat_id}#{m}")
    originals = sorted((chain[0].id, int(pmid)) for pmid, chain in chains.items() if pmid != "?")
    if [m for _, m in originals] != sorted(m for _, m in originals):
        outcome.out_of_order.append(f"{chat_id}: stored out of order")
    active = [int(r.platform_message_id or -1) for r in users if r.active]
    if active != sorted(active):
        outcome.out_of_order.append(f"{chat_id}: active transcript out of order")


def _is_copy_chain(chain: Sequence[StoredMessage], summaries: Sequence[int]) -> bool:
    """Rows of one message: all but the newest archived, each later one written by a compaction
    (a summary row was inserted between the previous row and it, in its own batch)."""
    if sum(row.active for row in chain) > 1:
        return False
    if any(row.active or not row.compacted for row in chain[:-1]):
        return False
    for previous, row in itertools.pairwise(chain):
        # A compaction inserts head copies, then its summary, then tail copies, in one batch.
        if not any(previous.id < s <= row.id + HEAD_COPIES for s in summaries):
            return False
    return True


# Head messages a first compaction keeps (protect_first_n) are inserted just before its summary.
HEAD_COPIES = 3


def render(outcome: Outcome) -> Section:
    plan = outcome.plan
    s = Section("Soak: many chats at once, a slow LLM, compactions all along")
    total = plan.chats * plan.per_chat
    s.add(
        f"{plan.chats} chats × {plan.per_chat} messages ({total:,}) arrive concurrently through "
        "`gateway.handle` (each chat in order, none waiting for the bot); one in "
        f"{ADDRESSED_EVERY} addresses the bot. The fake LLM answers after a seeded random "
        f"0–{MAX_LLM_LATENCY_SECONDS * 1000:.0f} ms; summaries go over HTTP to a local endpoint "
        f"with the same latency. Window {CONTEXT_TOKENS:,} tokens, so sessions compact again and "
        "again while new messages keep arriving. Afterwards every chat's full history "
        "(`load_history(include_archived=True)`) is checked message by message: one original "
        "row per sent message plus only compaction copies of it (each copy written in the batch "
        "of a summary inserted after the previous row), texts unchanged, order kept.",
        "",
    )
    rows = [
        ["messages sent", f"{total:,}"],
        ["all messages handed to the gateway after", f"{outcome.ingest:.1f} s"],
        ["every answer sent after (wall time)", f"{outcome.wall:.1f} s"],
        ["throughput", f"{total / outcome.wall:,.0f} messages/s"],
        [
            "`handle()` latency p50 / p99",
            f"{ms(_q(outcome.handle_latency, 0.5))} / {ms(_q(outcome.handle_latency, 0.99))}",
        ],
        [
            "addressed message → answer p50 / p99",
            f"{ms(_q(outcome.answer_latency, 0.5))} / {ms(_q(outcome.answer_latency, 0.99))}",
        ],
        ["model calls / summary calls", f"{outcome.llm_calls:,} / {outcome.summary_calls:,}"],
        [
            "compaction events",
            ", ".join(f"{k} {v}" for k, v in sorted(outcome.compactions.items())),
        ],
        ["stored rows (originals + compaction copies + summaries + replies)", f"{outcome.rows:,}"],
        ["lost / duplicated messages", f"{len(outcome.lost)} / {len(outcome.duplicated)}"],
        ["order violations", str(len(outcome.out_of_order))],
        [
            "addressed messages unanswered / answered twice",
            f"{len(outcome.unanswered)} / {len(outcome.answered_twice)}",
        ],
        [
            "active lanes / background tasks at the end",
            f"{outcome.active_lanes} / {outcome.background_tasks}",
        ],
        [
            "RSS start → peak → end",
            f"{outcome.rss_mb[0]:.0f} → {max(outcome.rss_mb):.0f} → {outcome.rss_mb[-1]:.0f} MB"
            if outcome.rss_mb
            else "–",
        ],
    ]
    s.add(*table(["", ""], rows))
    s.add(
        "The arrival is a burst: every message is handed over as fast as `handle()` returns, "
        "faster than 32 lanes with a 0–200 ms model can answer, so the answer latency is mostly "
        "the queue each chat's lane works through, and `handle()` itself waits behind the one "
        "SQLite writer that the answering lanes also use.",
        "",
    )
    for label, items in (
        ("lost", outcome.lost),
        ("duplicated", outcome.duplicated),
        ("out of order", outcome.out_of_order),
        ("unanswered", outcome.unanswered),
        ("answered twice", outcome.answered_twice),
    ):
        if items:
            s.add(f"First {label}: {', '.join(items[:10])}", "")
    s.target(
        "Soak: zero lost or duplicated, order kept, all answered",
        "0 violations",
        str(
            len(outcome.lost)
            + len(outcome.duplicated)
            + len(outcome.out_of_order)
            + len(outcome.unanswered)
            + len(outcome.answered_twice)
        ),
        not (outcome.lost or outcome.duplicated or outcome.out_of_order)
        and not (outcome.unanswered or outcome.answered_twice),
    )
    s.target(
        "Soak: idle lanes released",
        "0 active lanes",
        str(outcome.active_lanes),
        outcome.active_lanes == 0 and outcome.background_tasks == 0,
    )
    s.target(
        "Soak: memory bounded",
        f"RSS growth ≤ {RSS_GROWTH_LIMIT_MB:.0f} MB",
        f"{outcome.rss_growth_mb:.0f} MB",
        outcome.rss_growth_mb <= RSS_GROWTH_LIMIT_MB,
    )
    return s


def _q(samples: Sequence[float], q: float) -> float:
    return quantile(samples, q) if samples else float("nan")


async def run(quick: bool = False) -> tuple[Section, Outcome]:
    plan = QUICK if quick else FULL
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-soak-") as tmp:
        outcome = await soak(plan, Path(tmp))
    section = render(outcome)
    section.seconds = time.perf_counter() - started
    return section, outcome


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="40 chats × 25 messages")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    section, outcome = asyncio.run(run(quick=args.quick))
    print(f"## {section.title}\n")
    print("\n".join(section.body))
    for target in section.targets:
        state = "met" if target.met else "NOT met"
        print(f"- {target.name}: {target.measured} (target {target.wanted}) — {state}")
    return 0 if outcome.ok else 1


if __name__ == "__main__":
    sys.exit(main())

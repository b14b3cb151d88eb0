"""What the PostgreSQL soak runs (its plans) and what a run found, apart from the end checks."""

from __future__ import annotations

from dataclasses import dataclass, field

from bench.soak_pg_checks import Verdict
from bench.soak_pg_feed import Deliveries, ModelResponder

SEED = 20261214


@dataclass(frozen=True, slots=True)
class Plan:
    chats: int
    per_chat: int
    feed_seconds: float  # the deliveries are spread over about this long
    min_kills: int
    kill_every: tuple[float, float] = (2.0, 5.0)
    leader_kill_every: int = 4  # every this-many-th kill (the first included) hits the leader
    workers: int = 3
    addressed_every: int = 5
    duplicate_share: float = 0.05
    max_latency: float = 0.5
    context_length: int = 4_000
    protect_last_n: int = 5  # the fewest a chat admin may set: compactions summarize more
    drain_seconds: float = 240.0
    # A kill of a worker mid-send holds its chat's later replies for the send lease (two
    # minutes): a short run may spare the workers that are sending.
    spare_senders: bool = False
    turn_lease_seconds: float = 30.0  # the default: a killed worker's turns wait this long
    require_mid_compaction: bool = True
    # Throughput at a fixed model latency, no kills: chats × turns per chat, per worker count.
    throughput_workers: tuple[int, ...] = (1, 2, 3)
    throughput_chats: int = 200
    throughput_turns: int = 3
    fixed_latency: float = 0.2


FULL = Plan(chats=200, per_chat=50, feed_seconds=100.0, min_kills=24)
QUICK = Plan(
    chats=20,
    per_chat=16,
    feed_seconds=12.0,
    min_kills=4,
    kill_every=(1.5, 3.0),
    leader_kill_every=2,
    context_length=1_500,
    drain_seconds=180.0,
    spare_senders=True,
    turn_lease_seconds=10.0,
    require_mid_compaction=False,
    throughput_workers=(1, 3),
    throughput_chats=30,
    throughput_turns=2,
)


@dataclass(frozen=True, slots=True)
class Kill:
    at: float  # seconds into the run
    why: str  # leader | compaction | turn | random
    turns: int  # turn jobs it held
    compactions: int  # compaction leases it held
    sends: int  # outbox rows it was sending


@dataclass(slots=True)
class Chaos:
    plan: Plan
    kills: list[Kill] = field(default_factory=list)
    leader_gaps: list[float] = field(default_factory=list)
    leaderless: int = 0  # leader kills after which no new leader showed up in time
    first_leader: bool = False
    verdict: Verdict | None = None
    deliveries: Deliveries | None = None
    model: ModelResponder | None = None
    exit_codes: list[int] = field(default_factory=list)
    feed_seconds: float = 0.0
    wall: float = 0.0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Throughput:
    workers: int
    turns: int
    seconds: float  # from every worker ready to the last answer
    answered: int  # answers sent in that window
    cpu_seconds: float = 0.0  # the workers' CPU time in that window, all of them together
    api_calls: int = 0  # Bot API requests in that window (sends, admin lookups, …)

    @property
    def rate(self) -> float:
        return self.answered / self.seconds if self.seconds > 0 else 0.0

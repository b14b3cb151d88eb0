"""The PostgreSQL soak's results section: what ran, the numbers, and every check met or not."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from bench.report import Section, table
from bench.soak_pg_checks import Verdict
from bench.soak_pg_plan import Chaos, Throughput

LEADER_GAP_LIMIT_SECONDS = 10.0


def render(chaos: Chaos, rates: Sequence[Throughput]) -> Section:
    plan = chaos.plan
    s = Section("Chaos soak on PostgreSQL: workers killed at random")
    s.add(
        f"{plan.workers} `compactbot worker` processes and one `compactbot ingress` on one "
        f"PostgreSQL schema. {plan.chats} chats × {plan.per_chat} messages "
        f"({plan.chats * plan.per_chat:,}) go to the ingress as webhook POSTs, each chat in "
        f"order, spread over about {plan.feed_seconds:.0f} s, retried until a 200, and "
        f"{plan.duplicate_share:.0%} of them followed by a redelivery of an earlier update; "
        f"one in {plan.addressed_every} mentions the bot. The fake model answers after a "
        f"seeded random 0–{plan.max_latency * 1000:.0f} ms, summaries too; window "
        f"{plan.context_length:,} tokens and the last {plan.protect_last_n} messages protected, "
        "so sessions compact while the chat goes on. A worker "
        f"is SIGKILLed every {plan.kill_every[0]:g}–{plan.kill_every[1]:g} s (one kill in "
        f"{plan.leader_kill_every} hits the leader; otherwise, when there is one, a compaction's "
        "holder half the time, else a turn's holder most of the time) and restarted at once. "
        "At the end the database and the fake Bot API's log are checked.",
        "",
    )
    v = chaos.verdict or Verdict()
    kills = chaos.kills
    s.add(*table(["", ""], _chaos_rows(chaos, v)))
    if chaos.error:
        s.add(f"The run broke: {chaos.error}", "")
    for label, items in (
        ("lost", v.stored_lost),
        ("stored twice", v.stored_duplicated),
        ("stored out of order", v.stored_out_of_order),
        ("replies duplicated", v.replies_duplicated),
        ("wrong answers", v.replies_wrong),
        ("answered from the whole transcript", v.answered_from_whole),
        ("replies out of order", v.replies_out_of_order),
        ("unanswered", v.unanswered),
        ("answered with a notice", v.answered_with_notice),
        ("compaction mismatches", v.compaction_mismatch),
        ("recount mismatches", v.recount_mismatch),
    ):
        if items:
            s.add(f"First {label}: {'; '.join(items[:8])}", "")
    if rates:
        s.add(*_rates(plan.fixed_latency, rates))
    s.target("No message lost or stored twice", "0", str(_stored_faults(v)), not _stored_faults(v))
    s.target("No reply duplicated", "0", str(len(v.replies_duplicated)), not v.replies_duplicated)
    order = len(v.stored_out_of_order) + len(v.replies_out_of_order)
    s.target("Order kept per chat (stored, replied)", "0 chats out of order", str(order), not order)
    unanswered = len(v.unanswered) + len(v.answered_with_notice) + len(v.replies_wrong)
    s.target(
        "Every addressed message answered (unknown sends apart)",
        "0 unanswered",
        f"{unanswered} of {v.addressed}",
        v.addressed > 0 and not unanswered,
    )
    s.target(
        "Every compaction applied once",
        "0 mismatches, compactions > 0",
        f"{len(v.compaction_mismatch)} mismatches, {v.compactions} compactions",
        v.compactions > 0 and not v.compaction_mismatch,
    )
    s.target(
        "Running totals equal a recount",
        "0 sessions off",
        f"{len(v.recount_mismatch)} of {v.sessions}",
        v.sessions > 0 and not v.recount_mismatch,
    )
    s.target(
        "Queues drained",
        "0 open turns, 0 unsent replies",
        f"{v.inbox_open} / {v.outbox_open}",
        v.inbox_open == 0 and v.outbox_open == 0,
    )
    gaps = chaos.leader_gaps
    s.target(
        "New leader after the leader's SIGKILL",
        f"≤ {LEADER_GAP_LIMIT_SECONDS:.0f} s, every time",
        f"max {max(gaps):.1f} s over {len(gaps)} kills" if gaps else "no leader seen",
        bool(gaps) and max(gaps) <= LEADER_GAP_LIMIT_SECONDS and not chaos.leaderless,
    )
    mid_turn = sum(k.turns > 0 for k in kills)
    mid_compaction = sum(k.compactions > 0 for k in kills)
    s.target(
        "Kills (mid-turn, mid-compaction)",
        f"≥ {plan.min_kills} (≥ 1, {'≥ 1' if plan.require_mid_compaction else 'any'})",
        f"{len(kills)} ({mid_turn}, {mid_compaction})",
        len(kills) >= plan.min_kills
        and mid_turn > 0
        and (mid_compaction > 0 or not plan.require_mid_compaction),
    )
    s.target(
        "Run completed, every process stopped cleanly by SIGTERM",
        "no error, exit 0",
        chaos.error or f"exit codes {sorted(set(chaos.exit_codes))}",
        chaos.error is None and all(code == 0 for code in chaos.exit_codes),
    )
    return s


def _stored_faults(v: Verdict) -> int:
    return len(v.stored_lost) + len(v.stored_duplicated)


def _chaos_rows(chaos: Chaos, v: Verdict) -> list[list[str]]:
    d, kills = chaos.deliveries, chaos.kills
    why = Counter(k.why for k in kills)
    gaps = sorted(chaos.leader_gaps)
    rows = [
        [
            "webhook POSTs (refused or failed, retried) / duplicates delivered",
            f"{d.tries:,} ({d.refused:,}) / {d.duplicates:,}" if d else "–",
        ],
        [
            "all delivered after / everything drained after",
            f"{chaos.feed_seconds:.0f} s / {chaos.wall:.0f} s",
        ],
        [
            "SIGKILLs aimed at the leader / a compaction / a turn / anyone",
            f"{len(kills)}: "
            + " / ".join(str(why[k]) for k in ("leader", "compaction", "turn", "random")),
        ],
        [
            "kills while holding a turn / a compaction / a send",
            f"{sum(k.turns > 0 for k in kills)} / {sum(k.compactions > 0 for k in kills)} / "
            f"{sum(k.sends > 0 for k in kills)}",
        ],
        [
            "new leader after the leader's kill (each)",
            ", ".join(f"{g:.1f} s" for g in gaps) if gaps else "no leader seen",
        ],
        [
            "addressed messages / answered (of which from the whole transcript: question"
            " summarized before its turn ran)",
            f"{v.addressed:,} / {v.answered:,} ({len(v.answered_from_whole)})",
        ],
        [
            "sends of unknown outcome (worker died mid-send; delivered / not delivered)",
            f"{v.unknown_sends} ({v.unknown_delivered} / {v.unknown_sends - v.unknown_delivered})",
        ],
        [
            "other sends (notices), most common",
            f"{v.other_sends}"
            + "".join(f"; {n}× “{text}…”" for text, n in v.other_texts.most_common(3)),
        ],
        [
            "model calls: turns / summaries",
            f"{chaos.model.turns:,} / {chaos.model.summaries:,}" if chaos.model else "–",
        ],
        [
            "compaction events (trigger outcome)",
            ", ".join(f"{k} {n}" for k, n in sorted(v.events.items())) or "none",
        ],
        [
            "compactions applied / summary rows / sessions",
            f"{v.compactions} / {v.summary_rows} / {v.sessions}",
        ],
        ["outbox rows by state", ", ".join(f"{k} {n}" for k, n in sorted(v.outbox_states.items()))],
    ]
    return rows


def _rates(latency: float, rates: Sequence[Throughput]) -> list[str]:
    base = rates[0].rate if rates and rates[0].workers == 1 else 0.0
    rows = [
        [
            str(r.workers),
            f"{r.turns:,}",
            f"{r.seconds:.1f} s",
            f"{r.rate:.1f} /s",
            f"× {r.rate / base:.2f}" if base else "–",
            f"{r.cpu_seconds / r.answered * 1000:.0f} ms" if r.answered else "–",
            f"{r.cpu_seconds / r.seconds / r.workers:.0%}" if r.seconds else "–",
            f"{r.api_calls / r.seconds / r.workers:.1f} /s" if r.seconds else "–",
        ]
        for r in rates
    ]
    return [
        f"Throughput without kills at a fixed {latency * 1000:.0f} ms model latency: the turns "
        "are queued first (ingress only), then the workers start together; answers per second "
        "from the moment all of them are ready until the last answer. Each turn's asker is "
        "new to the admin cache, so a turn makes two Bot API requests (getChatMember, "
        "sendMessage). Each worker's python-telegram-bot client paces all of its requests "
        "with `AIORateLimiter` (30 per second per process), and the workers together keep "
        "Telegram's 30 messages a second for the bot (`send_pacing` in the database): those "
        "paces, not the model latency (32 turns in flight × 200 ms would allow 160 "
        "answers/s) nor the CPU, bound the fleet, so past two workers the answers approach "
        "30/s and stay there.",
        "",
        *table(
            [
                "workers",
                "turns",
                "window",
                "answered",
                "vs 1 worker",
                "worker CPU per answer",
                "CPU busy per worker",
                "Bot API requests per worker",
            ],
            rows,
        ),
    ]

"""A tiny run of the PostgreSQL chaos soak (`make soak-pg`, bench/soak_pg.py), every check on.

Three real `compactbot worker` processes and a `compactbot ingress` on a fresh schema, webhook
deliveries with duplicates, compactions, and SIGKILLs aimed at the leader and at workers
holding a turn; the end checks must all hold.
"""

from __future__ import annotations

from pathlib import Path

from bench.soak_pg import chaos
from bench.soak_pg_checks import Verdict, check_replies
from bench.soak_pg_feed import Message, chat_id_of
from bench.soak_pg_plan import Plan
from bench.soak_pg_report import render
from tests import postgres_server
from tests.fakes.telegram_server import SentMessage

TINY = Plan(
    chats=6,
    per_chat=12,
    feed_seconds=6.0,
    min_kills=3,
    kill_every=(0.5, 1.5),
    leader_kill_every=3,
    context_length=1_500,
    drain_seconds=90.0,
    # The send lease would hold a chat's replies for two minutes after a kill mid-send.
    spare_senders=True,
    turn_lease_seconds=5.0,
    require_mid_compaction=False,
    throughput_workers=(),
)


async def test_tiny_chaos_soak_loses_duplicates_and_reorders_nothing(tmp_path: Path) -> None:
    postgres_server.require_server()

    outcome = await chaos(TINY, tmp_path)

    section = render(outcome, [])
    missed = [f"{t.name}: {t.measured} (wanted {t.wanted})" for t in section.targets if not t.met]
    assert not missed, "\n".join([*missed, *section.body])
    verdict = outcome.verdict
    assert verdict is not None and verdict.answered == verdict.addressed == 6 * 2  # #4 and #9
    assert outcome.leader_gaps and verdict.compactions > 0
    assert outcome.deliveries is not None and outcome.deliveries.duplicates > 0


def answer(chat: int, n: int, to: int) -> SentMessage:
    params = {"reply_parameters": {"message_id": to}}
    return SentMessage(chat_id_of(chat), f"A{chat}x{n}A sure", 0, None, None, params)


def test_reply_checks_catch_a_duplicate_a_reorder_a_wrong_answer_and_a_missing_one() -> None:
    chats = [[Message(0, n, f"T0x{n}T", addressed=True) for n in range(5)]]
    ids = {(0, n): 100 + n for n in range(5)}
    sent = [answer(0, 1, 101), answer(0, 0, 100), answer(0, 0, 100), answer(0, 3, 102)]
    verdict = Verdict()

    check_replies(chats, ids, sent, [(104, "A0x4A sure")], verdict)

    assert verdict.replies_duplicated == ["chat 0 #0 (2 times)"]
    assert verdict.replies_out_of_order == ["chat 0"]
    assert verdict.answered_from_whole == ["chat 0 #2 answered with A0x3A"]
    assert verdict.unanswered == ["chat 0 #3"]
    assert verdict.unknown_unanswered == 1 and verdict.unknown_delivered == 0
    assert verdict.answered == 3

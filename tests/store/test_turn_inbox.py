"""The durable turn queue and the reply outbox on PostgreSQL (SPEC 15): FIFO per chat, one job
per chat, takeover after a lease runs out, fenced last commits, and no blind resends."""

from __future__ import annotations

import asyncio

import pytest

from compactbot.bot.store import PostgresStore
from compactbot.bot.store.base import InboxEntry, IngestItem, NewMessage, TurnLost
from compactbot.bot.store.postgres.queue.inbox import Say
from tests.store.conftest import ManualClock
from tests.store.factories import user

TTL = 30.0
PLATFORMS = ("telegram",)


def question(chat: str, update: int, text: str, *, lane: str | None = None) -> IngestItem:
    lane = lane or f"{chat}|"
    return IngestItem(
        "telegram",
        str(update),
        chat,
        None,
        user(text),
        enqueue=InboxEntry(lane, {"text": text}),
    )


def say(text: str) -> Say:
    return Say("telegram", {"chat_id": "1"}, text)


async def test_a_questions_turn_commits_with_it_and_a_duplicate_enqueues_nothing(
    pg: PostgresStore,
) -> None:
    [first] = await pg.ingest([question("telegram:1", 1, "hi")])
    [again] = await pg.ingest([question("telegram:1", 1, "hi")])
    assert again.duplicate
    [job] = await pg.inbox().claim("w1", 10, TTL, PLATFORMS)
    assert job.kind == "turn"
    assert job.payload["message_id"] == first.message_id
    assert first.session is not None and job.payload["session_id"] == first.session.id
    assert await pg.inbox().unfinished() == 1


async def test_claims_are_fifo_per_chat_with_one_job_per_chat(pg: PostgresStore) -> None:
    await pg.ingest([question("telegram:1", n, f"a{n}") for n in range(3)])
    await pg.ingest([question("telegram:2", 10 + n, f"b{n}") for n in range(2)])
    inbox = pg.inbox()
    jobs = await inbox.claim("w1", 10, TTL, PLATFORMS)
    assert [j.payload["text"] for j in jobs] == ["a0", "b0"]
    assert await inbox.claim("w2", 10, TTL, PLATFORMS) == []  # both chats are busy
    assert await inbox.finish(jobs[0], says=[say("r0")])
    [nxt] = await inbox.claim("w2", 10, TTL, PLATFORMS)
    assert nxt.payload["text"] == "a1"


async def test_concurrent_claimers_never_take_the_same_job(
    pg: PostgresStore, second: PostgresStore
) -> None:
    await pg.ingest([question(f"telegram:{c}", c, f"q{c}") for c in range(20)])
    got = await asyncio.gather(
        pg.inbox().claim("w1", 20, TTL, PLATFORMS), second.inbox().claim("w2", 20, TTL, PLATFORMS)
    )
    ids = [j.id for jobs in got for j in jobs]
    assert len(ids) == len(set(ids)) == 20


async def test_a_dead_holders_job_is_taken_over_after_its_lease_and_its_commit_is_void(
    pg: PostgresStore, second: PostgresStore, clock: ManualClock
) -> None:
    [result] = await pg.ingest([question("telegram:1", 1, "hi")])
    assert result.session is not None
    [stale] = await pg.inbox().claim("w1", 10, TTL, PLATFORMS)
    clock.advance(TTL - 1)
    assert await second.inbox().claim("w2", 10, TTL, PLATFORMS) == []  # the lease still holds
    clock.advance(2)
    [taken] = await second.inbox().claim("w2", 10, TTL, PLATFORMS)
    assert taken.id == stale.id and taken.fence.attempts == 2
    assert not await pg.inbox().renew(stale.fence, TTL)
    reply = user("stale answer")
    assert not await pg.inbox().finish(
        stale, session_id=result.session.id, replies=[reply], says=[say("stale")]
    )
    assert await pg.outbox().states() == {}
    texts = [m.text for m in await pg.load_active(result.session.id)]
    assert texts == ["[alice] hi"]  # the stale owner's reply row was not written either
    assert await second.inbox().renew(taken.fence, TTL)
    assert await second.inbox().finish(taken, says=[say("fresh")])
    assert list((await pg.outbox().states()).values()) == ["pending"]


async def test_renewal_keeps_the_job_and_release_hands_it_back(
    pg: PostgresStore, second: PostgresStore, clock: ManualClock
) -> None:
    await pg.ingest([question("telegram:1", 1, "hi")])
    [job] = await pg.inbox().claim("w1", 10, TTL, PLATFORMS)
    for _ in range(3):
        clock.advance(TTL / 2)
        assert await pg.inbox().renew(job.fence, TTL)
    assert await second.inbox().claim("w2", 10, TTL, PLATFORMS) == []
    await pg.inbox().release(job.fence)
    [again] = await second.inbox().claim("w2", 10, TTL, PLATFORMS)
    assert again.id == job.id


async def test_command_replies_queue_behind_the_chats_turns(pg: PostgresStore) -> None:
    await pg.ingest([question("telegram:1", 1, "hi")])
    inbox = pg.inbox()
    await inbox.enqueue_sends("telegram:1|", "telegram:1", [say("done: /new")])
    [turn] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    assert await inbox.claim("w1", 10, TTL, PLATFORMS) == []
    await inbox.finish(turn, says=[say("answer")])
    [send] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    assert send.kind == "send" and send.payload["text"] == "done: /new"


async def test_outbox_rows_go_out_in_order_per_chat(pg: PostgresStore) -> None:
    await pg.ingest([question("telegram:1", 1, "hi")])
    inbox, outbox = pg.inbox(), pg.outbox()
    [job] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    await inbox.finish(job, says=[say("notice"), say("answer")])
    [first] = await outbox.claim("w1", 10, TTL, PLATFORMS)
    assert first.text == "notice"
    assert (
        await outbox.claim("w2", 10, TTL, PLATFORMS) == []
    )  # the chat's earlier row is being sent
    await outbox.settle(first.id, "w1", "sent")
    [second_row] = await outbox.claim("w2", 10, TTL, PLATFORMS)
    assert second_row.text == "answer" and second_row.nonce != first.nonce


async def test_a_send_left_in_flight_by_a_dead_worker_becomes_unknown_never_resent(
    pg: PostgresStore, clock: ManualClock
) -> None:
    await pg.ingest([question("telegram:1", 1, "hi")])
    inbox, outbox = pg.inbox(), pg.outbox()
    [job] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    await inbox.finish(job, says=[say("answer"), say("after")])
    [row] = await outbox.claim("w1", 10, TTL, PLATFORMS)
    assert await outbox.mark_sending(row.id, "w1")  # its request left for the platform
    assert await outbox.abandon_stale() == []  # its lease still holds
    clock.advance(TTL + 1)
    [abandoned] = await outbox.abandon_stale()
    assert (abandoned.id, abandoned.attempted, abandoned.resent) == (row.id, True, False)
    [nxt] = await outbox.claim("w2", 10, TTL, PLATFORMS)
    assert nxt.text == "after"  # the chat moves on; the unknown one is not sent again
    await outbox.settle(row.id, "w1", "sent")  # the dead worker's late word is ignored
    assert (await outbox.states())[row.id] == "unknown"


async def test_a_claimed_reply_that_never_left_is_sent_by_another_worker(
    pg: PostgresStore, clock: ManualClock
) -> None:
    # The worker died while the reply waited in its rate limiter: nothing reached the chat.
    await pg.ingest([question("telegram:1", 1, "hi")])
    inbox, outbox = pg.inbox(), pg.outbox()
    [job] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    await inbox.finish(job, says=[say("answer")])
    [row] = await outbox.claim("w1", 10, TTL, PLATFORMS)
    clock.advance(TTL + 1)
    [abandoned] = await outbox.abandon_stale()
    assert (abandoned.id, abandoned.attempted) == (row.id, False)
    [again] = await outbox.claim("w2", 10, TTL, PLATFORMS)
    assert again.id == row.id
    assert not await outbox.mark_sending(row.id, "w1")  # the dead worker's claim is gone
    assert await outbox.mark_sending(row.id, "w2")
    await outbox.settle(row.id, "w2", "sent")
    assert (await outbox.states())[row.id] == "sent"


async def test_only_the_holder_takes_back_a_send_refused_unread(pg: PostgresStore) -> None:
    await pg.ingest([question("telegram:1", 1, "hi")])
    inbox, outbox = pg.inbox(), pg.outbox()
    [job] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    await inbox.finish(job, says=[say("answer")])
    [row] = await outbox.claim("w1", 10, TTL, PLATFORMS)
    assert not await outbox.unmark_sending(row.id, "w1")  # nothing left yet
    assert await outbox.mark_sending(row.id, "w1")
    assert not await outbox.unmark_sending(row.id, "w2")
    assert await outbox.unmark_sending(row.id, "w1")  # a flood wait: back to claimed
    assert (await outbox.states())[row.id] == "claimed"


async def test_a_worker_claims_only_chats_of_platforms_it_can_answer_on(pg: PostgresStore) -> None:
    await pg.ingest([question("discord:7", 1, "d"), question("telegram:1", 2, "t")])
    [job] = await pg.inbox().claim("w1", 10, TTL, PLATFORMS)
    assert job.chat_key == "telegram:1"
    [other] = await pg.inbox().claim("w2", 10, TTL, ("discord",))
    assert other.chat_key == "discord:7"


async def test_old_finished_jobs_and_settled_replies_are_pruned(
    pg: PostgresStore, clock: ManualClock
) -> None:
    await pg.ingest([question("telegram:1", 1, "a"), question("telegram:1", 2, "b")])
    inbox, outbox = pg.inbox(), pg.outbox()
    [job] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    await inbox.finish(job, says=[say("answer")])
    clock.advance(100)
    assert await inbox.prune(keep_seconds=50) == 0  # its reply is not settled yet
    [row] = await outbox.claim("w1", 10, TTL, PLATFORMS)
    await outbox.settle(row.id, "w1", "sent")
    assert await inbox.prune(keep_seconds=50) == 1
    assert await outbox.states() == {}
    assert await inbox.unfinished() == 1  # the chat's next question stays


async def test_a_dead_senders_row_on_a_nonce_platform_goes_out_again_with_its_nonce(
    pg: PostgresStore, clock: ManualClock
) -> None:
    await pg.ingest([question("discord:7", 1, "a"), question("discord:8", 2, "b")])
    inbox, outbox = pg.inbox(), pg.outbox()
    for job in await inbox.claim("w1", 10, TTL, ("discord",)):
        await inbox.finish(job, says=[Say("discord", {"chat_id": job.chat_key}, "hi")])
    [early] = await outbox.claim("w1", 1, TTL, ("discord",))
    assert await outbox.mark_sending(early.id, "w1")
    clock.advance(100)  # the second row is first attempted much later
    [late] = await outbox.claim("w1", 1, TTL, ("discord",))
    assert await outbox.mark_sending(late.id, "w1")
    clock.advance(TTL + 1)
    abandoned = await outbox.abandon_stale(("discord",), nonce_window_seconds=120)
    assert {(a.id, a.resent) for a in abandoned} == {(early.id, False), (late.id, True)}
    [again] = await outbox.claim("w2", 10, TTL, ("discord",))
    assert (again.id, again.nonce) == (late.id, late.nonce)
    assert len(again.nonce) <= 20
    assert (await outbox.states())[early.id] == "unknown"


async def test_every_write_of_a_taken_over_turn_is_refused_and_changes_nothing(
    pg: PostgresStore, clock: ManualClock
) -> None:
    [stored] = await pg.ingest([question("telegram:1", 1, "hi")])
    assert stored.session is not None
    session_id = stored.session.id
    inbox = pg.inbox()
    [stale] = await inbox.claim("w1", 10, TTL, PLATFORMS)
    tool_row = NewMessage.from_openai({"role": "assistant", "content": "thinking"}, 3)
    assert await pg.append_messages(session_id, [tool_row], fence=stale.fence)  # still ours
    clock.advance(TTL + 1)
    [current] = await inbox.claim("w2", 10, TTL, PLATFORMS)  # w1 looked dead: taken over
    before = await pg.get_session(session_id)
    rows_before = await pg.load_active(session_id)
    with pytest.raises(TurnLost):
        await pg.append_messages(session_id, [tool_row], fence=stale.fence)
    with pytest.raises(TurnLost):
        await pg.apply_state_delta(
            session_id, before.version, lambda state: state, fence=stale.fence
        )
    assert await pg.load_active(session_id) == rows_before
    assert await pg.get_session(session_id) == before
    assert await pg.append_messages(session_id, [tool_row], fence=current.fence)

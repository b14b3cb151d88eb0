"""The durable turn queue on PostgreSQL: claim, renew, release and the fenced last commit.

Every chat (lane) is a FIFO; only its oldest unfinished job may be claimed, so a chat runs one
job at a time on whichever worker claimed it. A claim is a lease: its holder renews it, and when
the holder dies another worker claims the job again once the lease has run out. `attempts` grows
with every claim, so (id, holder, attempts) fences a stale owner out of every later write.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from compactbot.bot.store.base import NewMessage, TurnFence
from compactbot.bot.store.postgres.appends import append_rows
from compactbot.bot.store.postgres.database import PostgresDatabase, affected
from compactbot.bot.store.postgres.queue.queue_sql import (
    CHANNEL_SQL,
    FENCE_SQL,
    INSERT_JOB_SQL,
    NOTIFY_SQL,
)

if TYPE_CHECKING:
    from compactbot.bot.store.postgres.database import PooledConnection

# The lane heads (oldest unfinished job of a chat) a worker may answer, free now. A head still
# 'doing' once its lease ran out lost its worker: a survivor.
_HEADS = """
    SELECT t.id FROM turn_inbox t
    WHERE t.state <> 'done' AND (t.state = 'todo' OR t.lease_until < {now}) AND {which}
      AND NOT EXISTS (
          SELECT 1 FROM turn_inbox o WHERE o.lane = t.lane AND o.state <> 'done' AND o.id < t.id
      )
      AND split_part(t.chat_key, ':', 1) = ANY({platforms}::text[])
"""
_SURVIVOR = "t.state = 'doing'"
# Locked with SKIP LOCKED, so concurrent claimers never wait on (or take) each other's rows.
_CLAIM_SQL = """
UPDATE turn_inbox SET state = 'doing', holder = $1, lease_until = $2::float8 + $3::float8,
    attempts = attempts + 1, alone = false
WHERE id IN ({heads} ORDER BY t.id LIMIT $5 FOR UPDATE SKIP LOCKED)
RETURNING id, lane, chat_key, kind, payload, attempts, alone, strikes
""".format(heads=_HEADS.format(which="t.state = 'todo'", now="$2", platforms="$4"))
# A survivor runs alone on an idle worker; if that worker dies too, the job struck it.
_CLAIM_SURVIVOR_SQL = """
UPDATE turn_inbox SET state = 'doing', holder = $1, lease_until = $2::float8 + $3::float8,
    attempts = attempts + 1, strikes = strikes + alone::int, alone = true
WHERE id IN ({heads} ORDER BY t.id LIMIT 1 FOR UPDATE SKIP LOCKED)
RETURNING id, lane, chat_key, kind, payload, attempts, alone, strikes
""".format(heads=_HEADS.format(which=_SURVIVOR, now="$2", platforms="$4"))
_SURVIVOR_WAITS_SQL = "SELECT EXISTS({heads})".format(
    heads=_HEADS.format(which=_SURVIVOR, now="$1", platforms="$2")
)
# Discord takes nonces of up to 25 characters; a multi-part send appends its part number.
NONCE_CHARS = 20
_INSERT_SAY_SQL = (
    "INSERT INTO reply_outbox(inbox_id, lane, chat_key, platform, target, text, nonce, created_at)"
    " VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8)"
)


@dataclass(frozen=True, slots=True)
class Say:
    """One message for a chat, written to the outbox with the job that produced it."""

    platform: str
    target: Mapping[str, Any]
    text: str


@dataclass(frozen=True, slots=True)
class InboxJob:
    id: int
    lane: str
    chat_key: str
    kind: str  # turn | send
    payload: Mapping[str, Any]
    fence: TurnFence
    alone: bool = False  # it lost a worker before: nothing else may run beside it
    strikes: int = 0  # workers it was running alone on that died


class PostgresInbox:
    """The queue's statements; times come from the store's clock (seconds)."""

    def __init__(self, db: PostgresDatabase, clock: Callable[[], float]) -> None:
        self._db = db
        self._clock = clock

    async def channel(self) -> str:
        """The NOTIFY channel that wakes this schema's workers."""
        row = await self._db.fetchone(CHANNEL_SQL)
        return str(row[0])

    async def enqueue_sends(self, lane: str, chat_key: str, says: Sequence[Say]) -> None:
        """Command replies, queued behind the chat's turns so they keep the chat's order."""
        if not says:
            return
        now = self._clock()
        async with self._db.transaction() as conn:
            for say in says:
                await conn.execute(
                    INSERT_JOB_SQL, lane, chat_key, "send", json.dumps(_say_json(say)), now
                )
            await conn.execute(NOTIFY_SQL)

    async def claim(
        self,
        holder: str,
        limit: int,
        ttl_seconds: float,
        platforms: Sequence[str],
        *,
        idle: bool = True,
    ) -> list[InboxJob]:
        """Up to `limit` jobs of chats on `platforms` (those this worker can answer on).

        A job that lost its worker goes first, alone, to a worker running nothing (`idle`); while
        one waits, busy workers claim nothing new, so it gets a worker soon even under load."""
        if limit <= 0:
            return []
        now, names = self._clock(), list(platforms)
        async with self._db.transaction() as conn:
            if idle:
                found = await conn.fetch(_CLAIM_SURVIVOR_SQL, holder, now, ttl_seconds, names)
            elif await conn.fetchval(_SURVIVOR_WAITS_SQL, now, names):
                return []
            else:
                found = []
            if not found:
                found = await conn.fetch(_CLAIM_SQL, holder, now, ttl_seconds, names, limit)
        jobs = [
            InboxJob(
                int(r["id"]),
                r["lane"],
                r["chat_key"],
                r["kind"],
                json.loads(r["payload"]),
                TurnFence(int(r["id"]), holder, int(r["attempts"])),
                bool(r["alone"]),
                int(r["strikes"]),
            )
            for r in found
        ]
        return sorted(jobs, key=lambda job: job.id)

    async def renew(self, fence: TurnFence, ttl_seconds: float) -> bool:
        """Extend a live lease; False once it ran out or another worker took the job."""
        now = self._clock()
        async with self._db.transaction() as conn:
            status = await conn.execute(
                "UPDATE turn_inbox SET lease_until = $4::float8 + $5::float8"
                f" WHERE {FENCE_SQL} AND lease_until > $4",
                fence.job_id,
                fence.holder,
                fence.attempts,
                now,
                ttl_seconds,
            )
        return affected(status) == 1

    async def release(self, fence: TurnFence) -> None:
        """Hand a job back untouched (shutdown), so another worker claims it at once."""
        async with self._db.transaction() as conn:
            status = await conn.execute(
                f"UPDATE turn_inbox SET state = 'todo', holder = NULL, lease_until = 0"
                f" WHERE {FENCE_SQL}",
                fence.job_id,
                fence.holder,
                fence.attempts,
            )
            if affected(status):
                await conn.execute(NOTIFY_SQL)

    async def finish(
        self,
        job: InboxJob,
        *,
        session_id: int | None = None,
        replies: Sequence[NewMessage] = (),
        says: Sequence[Say] = (),
    ) -> bool:
        """The job's last transaction: its reply rows, its outbox rows and its end, or nothing
        at all when the fence is stale (the job was taken over)."""
        now = self._clock()
        fence = job.fence
        async with self._db.transaction() as conn:
            owned = await conn.fetchval(
                f"SELECT 1 FROM turn_inbox WHERE {FENCE_SQL} FOR UPDATE",
                fence.job_id,
                fence.holder,
                fence.attempts,
            )
            if owned is None:
                return False
            if replies:
                assert session_id is not None
                await append_rows(conn, session_id, replies, now)
            await _insert_says(conn, job, says, now)
            await conn.execute(
                "UPDATE turn_inbox SET state = 'done', done_at = $2, lease_until = 0 WHERE id = $1",
                fence.job_id,
                now,
            )
            await conn.execute(NOTIFY_SQL)
        return True

    async def prune(self, keep_seconds: float) -> int:
        """Forget finished jobs, settled replies and send slots older than `keep_seconds`; how
        many jobs."""
        before = self._clock() - keep_seconds
        async with self._db.transaction() as conn:
            await conn.execute(
                "DELETE FROM reply_outbox WHERE state IN ('sent', 'failed', 'unknown')"
                " AND created_at < $1",
                before,
            )
            status = await conn.execute(
                "DELETE FROM turn_inbox t WHERE t.state = 'done' AND t.done_at < $1"
                " AND NOT EXISTS (SELECT 1 FROM reply_outbox r WHERE r.inbox_id = t.id)",
                before,
            )
            # A chat's send slot long past holds nothing: the chat starts afresh without it.
            await conn.execute("DELETE FROM send_pacing WHERE next_at < $1", before)
        return affected(status)

    async def unfinished(self) -> int:
        """Jobs not yet done (for status and tests)."""
        row = await self._db.fetchone("SELECT count(*) FROM turn_inbox WHERE state <> 'done'")
        return int(row[0])

    async def backlog(self, platforms: Sequence[str]) -> tuple[int, float]:
        """Jobs of `platforms` not yet done, and how long ago the oldest was queued (0: none)."""
        row = await self._db.fetchone(
            "SELECT count(*), min(created_at) FROM turn_inbox WHERE state <> 'done'"
            " AND split_part(chat_key, ':', 1) = ANY($1::text[])",
            (list(platforms),),
        )
        oldest = row[1]
        return int(row[0]), 0.0 if oldest is None else max(0.0, self._clock() - float(oldest))


async def _insert_says(
    conn: PooledConnection, job: InboxJob, says: Sequence[Say], now: float
) -> None:
    for say in says:
        await conn.execute(
            _INSERT_SAY_SQL,
            job.id,
            job.lane,
            job.chat_key,
            say.platform,
            json.dumps(dict(say.target)),
            say.text,
            uuid.uuid4().hex[:NONCE_CHARS],
            now,
        )


def _say_json(say: Say) -> dict[str, Any]:
    return {"platform": say.platform, "target": dict(say.target), "text": say.text}


def say_from_json(raw: Mapping[str, Any]) -> Say:
    return Say(str(raw["platform"]), dict(raw["target"]), str(raw["text"]))

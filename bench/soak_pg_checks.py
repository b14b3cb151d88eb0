"""The PostgreSQL soak's end checks: the database and the fake Bot API against what was sent."""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg

from bench.soak_pg_feed import ANSWER, Message, chat_id_of
from compactbot.bot.events import chat_key
from compactbot.bot.store import PostgresStore
from tests.fakes.telegram_server import SentMessage

CHANGED = ("compressed", "fallback")
# Head rows a first compaction keeps (compression.protect_first_n) go just before its summary.
HEAD_COPIES = 3

_SESSIONS_SQL = """
SELECT s.id, s.chat_key, s.compression_count, s.active_tokens, s.active_messages,
    (SELECT count(*) FROM compression_events e
     WHERE e.session_id = s.id AND e.outcome = ANY($1::text[])) AS changed,
    (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.kind = 'summary') AS summaries
FROM sessions s ORDER BY s.id
"""


@dataclass(slots=True)
class Verdict:
    """What the checks found; every list names the offending messages or sessions."""

    stored_lost: list[str] = field(default_factory=list)
    stored_duplicated: list[str] = field(default_factory=list)
    stored_out_of_order: list[str] = field(default_factory=list)
    replies_duplicated: list[str] = field(default_factory=list)
    replies_wrong: list[str] = field(default_factory=list)
    # Questions a compaction summarized before their turn ran: the runner then answers from
    # the whole transcript (bot/turns/runner.py `_turn_rows`), whose newest message is a later one.
    answered_from_whole: list[str] = field(default_factory=list)
    replies_out_of_order: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    answered_with_notice: list[str] = field(default_factory=list)
    compaction_mismatch: list[str] = field(default_factory=list)
    recount_mismatch: list[str] = field(default_factory=list)
    addressed: int = 0
    answered: int = 0
    # Sends whose worker died mid-send: the outbox marks them unknown and never repeats them.
    unknown_sends: int = 0
    unknown_delivered: int = 0
    unknown_unanswered: int = 0
    other_sends: int = 0  # notices (e.g. hygiene at the hard limit), not answers
    other_texts: Counter[str] = field(default_factory=Counter)  # their first words
    sessions: int = 0
    compactions: int = 0
    summary_rows: int = 0
    events: Counter[str] = field(default_factory=Counter)
    inbox_open: int = -1
    outbox_states: Counter[str] = field(default_factory=Counter)

    @property
    def outbox_open(self) -> int:
        return sum(self.outbox_states[state] for state in ("pending", "claimed", "sending"))


def reply_to(sent: SentMessage) -> int | None:
    raw = sent.params.get("reply_parameters")
    if isinstance(raw, str):
        raw = json.loads(raw)
    if isinstance(raw, Mapping) and raw.get("message_id") is not None:
        return int(raw["message_id"])
    return None


async def verify(
    store: PostgresStore,
    pool: asyncpg.Pool,
    chats: Sequence[Sequence[Message]],
    ids: Mapping[tuple[int, int], int],
    sent_log: Sequence[SentMessage],
) -> Verdict:
    verdict = Verdict()
    for row in chats:
        await _check_stored(store, row, ids, verdict)
    async with pool.acquire() as conn:
        await _check_queues(conn, verdict)
        unknown = await _unknown_rows(conn)
        await _check_sessions(store, conn, verdict)
    check_replies(chats, ids, sent_log, unknown, verdict)
    return verdict


async def _check_stored(
    store: PostgresStore, row: Sequence[Message], ids: Mapping[tuple[int, int], int], v: Verdict
) -> None:
    """Every delivered message stored once: one original row plus only compaction copies."""
    if not row:
        return
    c = row[0].chat
    history = await store.load_history(chat_key("telegram", str(chat_id_of(c))))
    # Places among the chat's rows: every writer of a session holds its row lock while it
    # inserts, so a compaction's rows are adjacent here though ids of other chats interleave.
    place = {m.id: i for i, m in enumerate(sorted(history, key=lambda r: r.id))}
    users = [m for m in history if m.role == "user" and m.kind == "message"]
    summaries = sorted(place[m.id] for m in history if m.kind == "summary")
    chains: dict[str, list[Any]] = defaultdict(list)
    for stored in sorted(users, key=lambda r: r.id):
        chains[stored.platform_message_id or "?"].append(stored)
    originals = []
    for message in row:
        name = f"chat {c} #{message.n}"
        chain = chains.get(str(ids.get((c, message.n))), [])
        if not chain:
            v.stored_lost.append(name)
            continue
        originals.append((chain[0].id, message.n))
        if any(not stored.text.endswith(message.body) for stored in chain):
            v.stored_lost.append(f"{name} (text changed)")
        if not _is_copy_chain([(place[r.id], r) for r in chain], summaries):
            v.stored_duplicated.append(name)
    if [n for _, n in sorted(originals)] != sorted(n for _, n in originals):
        v.stored_out_of_order.append(f"chat {c}")


def _is_copy_chain(chain: Sequence[tuple[int, Any]], summaries: Sequence[int]) -> bool:
    """(place, row)s of one message: all but the newest archived by a compaction, and each
    later row written by one (a summary between the previous row and it, or just after it)."""
    rows = [row for _, row in chain]
    if sum(row.active for row in rows) > 1:
        return False
    if any(row.active or not row.compacted for row in rows[:-1]):
        return False
    return all(
        any(previous < s <= current + HEAD_COPIES for s in summaries)
        for (previous, _), (current, _) in itertools.pairwise(chain)
    )


async def _check_queues(conn: Any, v: Verdict) -> None:
    v.inbox_open = int(await conn.fetchval("SELECT count(*) FROM turn_inbox WHERE state <> 'done'"))
    for r in await conn.fetch("SELECT state, count(*) AS n FROM reply_outbox GROUP BY state"):
        v.outbox_states[r["state"]] = int(r["n"])


async def _unknown_rows(conn: Any) -> list[tuple[int | None, str]]:
    """(question's Telegram id, text) of every outbox row whose outcome is unknown."""
    found = []
    for r in await conn.fetch("SELECT target, text FROM reply_outbox WHERE state = 'unknown'"):
        target = json.loads(r["target"])
        question = target.get("reply_to_message_id")
        found.append((int(question) if question else None, str(r["text"])))
    return found


async def _check_sessions(store: PostgresStore, conn: Any, v: Verdict) -> None:
    """Each committed compaction counted once in the session's state, with one summary row;
    the running totals equal a recount of the active rows."""
    for r in await conn.fetch(
        "SELECT trigger, outcome, count(*) AS n FROM compression_events GROUP BY 1, 2"
    ):
        v.events[f"{r['trigger']} {r['outcome']}"] = int(r["n"])
    for s in await conn.fetch(_SESSIONS_SQL, list(CHANGED)):
        v.sessions += 1
        v.compactions += int(s["changed"])
        v.summary_rows += int(s["summaries"])
        counts = (int(s["compression_count"]), int(s["changed"]), int(s["summaries"]))
        if len(set(counts)) != 1:
            v.compaction_mismatch.append(
                f"session {s['id']} ({s['chat_key']}): compression_count {counts[0]},"
                f" {counts[1]} compaction events, {counts[2]} summary rows"
            )
        totals = (int(s["active_tokens"]), int(s["active_messages"]))
        recount = await store.recount(int(s["id"]))
        if recount != totals:
            v.recount_mismatch.append(f"session {s['id']}: totals {totals}, recount {recount}")


def check_replies(
    chats: Sequence[Sequence[Message]],
    ids: Mapping[tuple[int, int], int],
    sent_log: Sequence[SentMessage],
    unknown: Sequence[tuple[int | None, str]],
    v: Verdict,
) -> None:
    """Each addressed message answered once, by an answer naming it, in question order."""
    question = {tg_id: key for key, tg_id in ids.items()}
    answers: dict[int, list[str]] = defaultdict(list)  # question's Telegram id -> answer texts
    notices: dict[int, list[str]] = defaultdict(list)
    order: dict[int, list[int]] = defaultdict(list)
    for sent in sent_log:
        target = reply_to(sent)
        tag = ANSWER.search(sent.text)
        if target is None or target not in question or tag is None:
            v.other_sends += 1
            v.other_texts[sent.text[:48]] += 1
            if target in question:
                notices[target].append(sent.text)
            continue
        c, n = question[target]
        answers[target].append(sent.text)
        order[c].append(n)
        named = (int(tag.group(1)), int(tag.group(2)))
        if named[0] == c and named[1] > n:
            v.answered_from_whole.append(f"chat {c} #{n} answered with {tag.group(0)}")
        elif named != (c, n):
            v.replies_wrong.append(f"chat {c} #{n} answered with {tag.group(0)}")
    delivered = {(q, text) for q, texts in answers.items() for text in texts}
    unknown_questions = {q for q, _ in unknown}
    v.unknown_sends = len(unknown)
    v.unknown_delivered = sum((q, text) in delivered for q, text in unknown if q is not None)
    for row in chats:
        for message in row:
            if not message.addressed:
                continue
            v.addressed += 1
            tg_id = ids.get((message.chat, message.n))
            name = f"chat {message.chat} #{message.n}"
            got = answers.get(tg_id, []) if tg_id is not None else []
            if len(got) > 1:
                v.replies_duplicated.append(f"{name} ({len(got)} times)")
            if got:
                v.answered += 1
            elif tg_id in unknown_questions:
                v.unknown_unanswered += 1
            elif tg_id is not None and notices.get(tg_id):
                v.answered_with_notice.append(f"{name}: {notices[tg_id][0][:60]}")
            else:
                v.unanswered.append(name)
    for c, ns in order.items():
        if ns != sorted(ns):
            v.replies_out_of_order.append(f"chat {c}")


def answered_keys(
    ids: Mapping[tuple[int, int], int], sent_log: Sequence[SentMessage]
) -> set[tuple[int, int]]:
    """The questions (chat, n) that have an answer in the fake's log so far."""
    question = {tg_id: key for key, tg_id in ids.items()}
    out = set()
    for sent in sent_log:
        target = reply_to(sent)
        if target in question and ANSWER.search(sent.text):
            out.add(question[target])
    return out

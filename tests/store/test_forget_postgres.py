"""Forgetting on PostgreSQL (SPEC 15, 16): the durable queues lose the text too, and a vacuum
leaves no dead row version holding it in the table's pages."""

from __future__ import annotations

import json

import asyncpg

from compactbot.bot.store import PostgresStore
from compactbot.bot.store.postgres.queue.queue_scrub import FORGET_VACUUMED
from tests.store.test_forget import CHAT, SECRET, posted

NEEDLE = "221B Baker"


async def _queued(pg: PostgresStore) -> int:
    """Dave's secret stored and answered through the queues: his turn's job, a job of a reply
    quoting it, and the bot's reply in the outbox."""
    session = await pg.active_session(CHAT)
    [secret_id, _] = await pg.append_messages(
        session.id, [posted(SECRET, "1"), posted("where is that?", "2", author="erin")]
    )
    conn = await asyncpg.connect(pg.dsn)
    try:
        for message_id, message in (
            (secret_id, {"text": SECRET, "reply_to_text": None}),
            (secret_id + 1, {"text": "where is that?", "reply_to_text": SECRET}),
        ):
            payload = {"message": message, "message_id": message_id, "session_id": session.id}
            await conn.execute(
                "INSERT INTO turn_inbox(lane, chat_key, kind, payload, state, created_at)"
                " VALUES ($1, $2, 'turn', $3::jsonb, 'done', 0)",
                CHAT, CHAT, json.dumps(payload),
            )  # fmt: skip
        await conn.execute(
            "INSERT INTO reply_outbox(lane, chat_key, platform, target, text, nonce, state,"
            " created_at) VALUES ($1, $1, 'discord', '{}'::jsonb, $2, 'n1', 'sent', 0)",
            CHAT, f"Noted.\n{SECRET}.\nAnything else?",
        )  # fmt: skip
    finally:
        await conn.close()
    return secret_id


async def test_forgetting_scrubs_the_turn_jobs_and_the_outbox(pg: PostgresStore) -> None:
    await _queued(pg)

    assert await pg.forget_messages(CHAT, ["1"]) == 1

    conn = await asyncpg.connect(pg.dsn)
    try:
        jobs = [json.loads(r[0]) for r in await conn.fetch("SELECT payload FROM turn_inbox")]
        [said] = [r[0] for r in await conn.fetch("SELECT text FROM reply_outbox")]
    finally:
        await conn.close()
    assert [job["message"]["text"] for job in jobs] == ["", "where is that?"]
    assert [job["message"]["reply_to_text"] for job in jobs] == [None, None]
    assert said == "Noted.\nAnything else?"


async def test_no_page_of_a_forgetting_table_holds_the_text_after_the_vacuum(
    pg: PostgresStore,
) -> None:
    await _queued(pg)
    needle = NEEDLE.encode()
    assert await _pages_holding(pg, needle)

    await pg.forget_messages(CHAT, ["1"])

    assert await _pages_holding(pg, needle) == []


async def _pages_holding(pg: PostgresStore, needle: bytes) -> list[str]:
    """The tables among FORGET_VACUUMED with a heap tuple, live or dead, containing `needle`."""
    conn = await asyncpg.connect(pg.dsn)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect SCHEMA public")
        found = []
        for table in FORGET_VACUUMED:
            pages = await conn.fetchval(
                "SELECT pg_relation_size($1::regclass) / current_setting('block_size')::int", table
            )
            count = await conn.fetchval(
                "SELECT count(*) FROM generate_series(0, $2::int - 1) AS p,"
                " public.heap_page_items(public.get_raw_page($1, p::int)) AS i"
                " WHERE i.t_data IS NOT NULL AND position($3::bytea IN i.t_data) > 0",
                table, pages, needle,
            )  # fmt: skip
            if count:
                found.append(table)
        return found
    finally:
        await conn.close()

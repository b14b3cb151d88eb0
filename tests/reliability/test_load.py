"""Load, fast version: many chats at once through `gateway.handle`, with compactions under way.

The long run lives in `make soak` (bench/soak.py); this one keeps the same checks small.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import Behaviour, FakeOpenAI, Reply
from tests.harness import RecordingAdapter, endpoint_env, group_message, make_config, running_app
from tests.reliability.rig import EchoLLM, assert_totals_match_recount, marker_of, originals

CHATS = 40
MESSAGES_PER_CHAT = 15
# Every third message addresses the bot; the rest are stored as context (observe mode).
ADDRESS_EVERY = 3
AUTHORS = ("Alice", "Bob", "Carol", "Dave")
# A small window so 15 long-ish messages per chat force compactions.
CONTEXT_LENGTH = 3_000
LATENCY_SECONDS = (0.0, 0.05)
SUMMARY = "## Participants\n- the group\n## Key facts and exact values\n- load test summary"
FILLER = (
    "we talked about the release train, the staging database, lunch options and the flaky "
    "integration tests that keep failing on the second runner every other night"
)


def _text(chat: int, index: int) -> str:
    tag = f"<<m{chat}-{index}>>"
    ask = " @bot what do you think?" if index % ADDRESS_EVERY == ADDRESS_EVERY - 1 else ""
    return f"{tag} {' '.join([FILLER] * 6)}{ask}"


async def test_forty_chats_concurrently_lose_duplicate_or_reorder_nothing(tmp_path: Path) -> None:
    rng = random.Random(11)

    def summarize(_body: dict[str, Any]) -> Behaviour:
        return Reply(SUMMARY, delay=rng.uniform(*LATENCY_SECONDS))

    async with FakeOpenAI(summarize) as summaries:
        config = make_config(
            tmp_path, endpoint_env(summaries.base_url, context_length=CONTEXT_LENGTH)
        )
        llm = EchoLLM(latency_seconds=LATENCY_SECONDS, seed=3)
        async with running_app(config, llm=llm) as app:
            adapter = RecordingAdapter()
            sent_ids: dict[int, list[str]] = {c: [] for c in range(CHATS)}
            addressed: dict[str, str] = {}

            async def chat(c: int) -> None:
                await asyncio.sleep(rng.uniform(0, 0.02))
                for i in range(MESSAGES_PER_CHAT):
                    text = _text(c, i)
                    message = group_message(
                        text,
                        author=AUTHORS[(c + i) % len(AUTHORS)],
                        chat_id=f"c{c}",
                        addressed="@bot" in text,
                    )
                    assert message.platform_message_id is not None
                    sent_ids[c].append(message.platform_message_id)
                    if message.addressed:
                        addressed[message.platform_message_id] = f"m{c}-{i}"
                    await app.gateway.handle(message, adapter)
                    await asyncio.sleep(rng.uniform(0, 0.01))

            await asyncio.gather(*(chat(c) for c in range(CHATS)))
            await app.gateway.join()
            assert app.gateway.lanes.active_lanes == 0

            store = app.services.store
            events = await store.list_compression_events(limit=10_000)
            assert sum(e.outcome in ("compressed", "fallback") for e in events) >= CHATS

            for c in range(CHATS):
                rows = await store.load_history(f"test:c{c}", include_archived=True)
                users = [r for r in rows if r.role == "user" and r.kind == "message"]
                first = originals(users)
                # Nothing lost, nothing duplicated: one original per message, with its text.
                assert sorted(first, key=int) == sorted(sent_ids[c], key=int)
                for pmid, row in first.items():
                    assert marker_of(row.text) == f"m{c}-{sent_ids[c].index(pmid)}"
                live = Counter(r.platform_message_id for r in users if r.active)
                assert all(n == 1 for n in live.values()), f"chat {c}: duplicated live rows"
                # Order kept: originals were stored in arrival order ...
                by_row_id = sorted(first.values(), key=lambda r: r.id)
                assert [r.platform_message_id for r in by_row_id] == sent_ids[c]
                # ... and the live transcript still lists the survivors in that order.
                live_order = [r.platform_message_id for r in users if r.active]
                assert live_order == [p for p in sent_ids[c] if p in live]
                sessions = {r.session_id for r in rows}
                await assert_totals_match_recount(store, sorted(sessions))

            # Every addressed message answered exactly once, with the answer to that message.
            replies = Counter(t.reply_to_message_id for t, _ in adapter.sent)
            assert set(replies) == set(addressed)
            assert all(n == 1 for n in replies.values())
            for target, text in adapter.sent:
                assert target.reply_to_message_id is not None
                assert marker_of(text) == addressed[target.reply_to_message_id]

"""End-to-end: the gateway, runner and compactor against a fake OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import random
from collections import deque
from pathlib import Path
from typing import Any

from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.store.base import NewMessage
from tests.fakes.openai_server import Behaviour, Error, FakeOpenAI, Reply, count_prompt_tokens
from tests.harness import RecordingAdapter, endpoint_env, group_message, make_config, running_app

PEOPLE = ["Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi"]
CHAT = "test:g1"
FAKE_SUMMARY = "## Participants\n- the group\n## Key facts and exact values\n- fake summary line"


def is_summary_call(body: dict[str, Any]) -> bool:
    return "tools" not in body


def summarizing_responder(summary_delay: float = 0.0):
    def respond(body: dict[str, Any]) -> Behaviour:
        if is_summary_call(body):
            return Reply(FAKE_SUMMARY, delay=summary_delay)
        last = body["messages"][-1]["content"]
        return Reply(f"answer to: {str(last)[:60]}")

    return respond


WORDS = ["deploy", "lunch", "tests", "release", "coffee", "budget", "design", "docs", "ok"]


def prose(rng: random.Random, words: int = 30) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def chatter(i: int, rng: random.Random) -> str:
    return f"message {i}: " + prose(rng)


async def seed_messages(app, texts: list[tuple[str, str]], chat_id: str = "g1") -> int:
    """Store unaddressed group messages straight through the store (fast), return session id."""
    store = app.services.store
    await store.upsert_chat(f"test:{chat_id}", "test")
    session = await store.active_session(f"test:{chat_id}")
    counter = app.services.counter
    rows = []
    for author, text in texts:
        content = f"[{author}] {text}"
        rows.append(
            NewMessage(
                role="user",
                content=content,
                tokens=counter.count_message({"role": "user", "content": content}),
                author_id=author.lower(),
                author_name=author,
            )
        )
    for start in range(0, len(rows), 500):
        await store.append_messages(session.id, rows[start : start + 500])
    return session.id


async def test_long_group_chat_stays_within_window_and_keeps_every_message(tmp_path: Path) -> None:
    rng = random.Random(7)
    async with FakeOpenAI(summarizing_responder()) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=8_000))
        async with running_app(config) as app:
            adapter = RecordingAdapter()
            for i in range(300):
                addressed = i % 15 == 14 or i == 299
                text = chatter(i, rng) + (" @bot what do you think?" if addressed else "")
                message = group_message(text, author=PEOPLE[i % 8], addressed=addressed)
                await app.gateway.handle(message, adapter)
            await app.gateway.join()

            store = app.services.store
            events = await store.list_compression_events(chat_key=CHAT)
            assert any(e.outcome == "compressed" for e in events)
            chat_calls = [b for b in fake.completions if not is_summary_call(b)]
            assert all(count_prompt_tokens(b) <= 8_000 for b in fake.completions)
            assert "message 299:" in chat_calls[-1]["messages"][-1]["content"]
            assert adapter.texts()[-1].startswith(f"answer to: [{PEOPLE[299 % 8]}] message 299:")
            history = await store.load_history(CHAT, include_archived=True)
            seen = {
                int(row.text.split("message ", 1)[1].split(":", 1)[0])
                for row in history
                if row.role == "user" and "] message " in row.text
            }
            assert seen == set(range(300))


async def test_hygiene_compacts_before_the_agent_at_85_percent(tmp_path: Path) -> None:
    async with FakeOpenAI(summarizing_responder()) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=200_000))
        async with running_app(config) as app:
            filler = "word " * 480
            await seed_messages(app, [(PEOPLE[i % 8], f"{i} {filler}") for i in range(360)])
            session = await app.services.store.active_session(CHAT)
            assert session.active_tokens >= 0.85 * 200_000
            adapter = RecordingAdapter()
            await app.gateway.handle(group_message("@bot status please"), adapter)
            await app.gateway.join()

            events = await app.services.store.list_compression_events(chat_key=CHAT)
            assert [e.trigger for e in events] == ["hygiene"]
            assert events[0].outcome == "compressed"
            first_chat = next(b for b in fake.completions if not is_summary_call(b))
            assert count_prompt_tokens(first_chat) < 0.5 * 200_000
            assert not any("reached" in text for text in adapter.texts())


async def test_hard_message_limit_compacts_whatever_the_tokens_and_says_so_once(
    tmp_path: Path,
) -> None:
    async with FakeOpenAI(summarizing_responder()) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=200_000))
        async with running_app(config) as app:
            await app.services.store.set_chat_setting(CHAT, "hygiene_hard_message_limit", "40")
            await seed_messages(app, [(PEOPLE[i % 8], f"short note {i}") for i in range(45)])
            adapter = RecordingAdapter()
            await app.gateway.handle(group_message("@bot hello"), adapter)
            await app.gateway.handle(group_message("@bot again", author="Bob"), adapter)
            await app.gateway.join()

            events = await app.services.store.list_compression_events(chat_key=CHAT)
            assert [e.trigger for e in events] == ["hygiene"]
            notices = [t for t in adapter.texts() if t.startswith("🧹 This chat reached")]
            assert len(notices) == 1


async def test_default_hard_limit_of_5000_messages_fires(tmp_path: Path) -> None:
    async with FakeOpenAI(summarizing_responder()) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=1_000_000))
        async with running_app(config) as app:
            await seed_messages(app, [(PEOPLE[i % 8], f"n{i}") for i in range(5_000)])
            adapter = RecordingAdapter()
            await app.gateway.handle(group_message("@bot hi"), adapter)
            await app.gateway.join()
            session = await app.services.store.active_session(CHAT)
            assert session.active_messages < 100
            assert sum(t.startswith("🧹 This chat reached 5001") for t in adapter.texts()) == 1


async def test_messages_during_a_slow_summary_are_stored_answered_in_order_and_kept(
    tmp_path: Path,
) -> None:
    async with FakeOpenAI(summarizing_responder(summary_delay=2.0)) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=200_000))
        async with running_app(config) as app:
            store = app.services.store
            # One compaction only: 100 messages reach the limit, the 20 live ones do not again.
            await store.set_chat_setting(CHAT, "hygiene_hard_message_limit", "80")
            session_id = await seed_messages(app, [("Bob", f"old {i}") for i in range(100)])
            adapter = RecordingAdapter()
            await app.gateway.handle(group_message("@bot first"), adapter)
            await _wait_until(lambda: any(is_summary_call(b) for b in fake.completions))
            assert await store.lock_holder(session_id) is not None

            for i in range(20):
                await app.gateway.handle(
                    group_message(f"@bot live {i}", author=PEOPLE[i % 8]), adapter
                )
            stored = [m.text for m in await store.load_active(session_id)]
            assert all(any(f"live {i}" in t for t in stored) for i in range(20))
            assert await store.lock_holder(session_id) is not None  # still summarising

            await app.gateway.join()
            asked = [
                b["messages"][-1]["content"] for b in fake.completions if not is_summary_call(b)
            ]
            assert asked[0].endswith("@bot first")
            assert [a.rsplit("live ", 1)[1] for a in asked[1:]] == [str(i) for i in range(20)]
            rows = await store.load_active(session_id)
            users = [m.text for m in rows if m.role == "user"]
            positions = [
                next(n for n, t in enumerate(users) if t.split("\n")[0].endswith(f"@bot live {i}"))
                for i in range(20)
            ]
            assert positions == sorted(positions)
            assert sum(1 for m in rows if m.kind == "summary") == 1
            events = await store.list_compression_events(chat_key=CHAT)
            assert [(e.trigger, e.outcome) for e in events] == [("hygiene", "compressed")]


async def test_fifty_chats_concurrently_lose_and_duplicate_nothing(tmp_path: Path) -> None:
    async with FakeOpenAI() as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=32_000))
        async with running_app(config) as app:
            adapter = RecordingAdapter()

            async def chat(c: int) -> None:
                for i in range(20):
                    message = group_message(
                        f"@bot c{c} m{i}", author=PEOPLE[i % 4], chat_id=f"c{c}"
                    )
                    await app.gateway.handle(message, adapter)

            await asyncio.gather(*(chat(c) for c in range(50)))
            await app.gateway.join()
            assert app.gateway.lanes.active_lanes == 0
            store = app.services.store
            for c in range(50):
                rows = await store.load_history(f"test:c{c}", include_archived=True)
                users = [r.text for r in rows if r.role == "user"]
                assert users == [f"[{PEOPLE[i % 4]}] @bot c{c} m{i}" for i in range(20)]
                assert len(adapter.texts(f"c{c}")) == 20
            asked: dict[str, list[int]] = {}
            for body in fake.completions:
                last = body["messages"][-1]["content"]
                c, m = last.rsplit("@bot ", 1)[1].split()
                asked.setdefault(c, []).append(int(m[1:]))
            assert all(order == list(range(20)) for order in asked.values())


async def test_overflow_413_then_400_compresses_and_the_turn_succeeds(tmp_path: Path) -> None:
    # The model's answers in order; summary calls (as many as the chunks of the span) all
    # get the fake summary, so the test does not depend on how many chunks an 8K window needs.
    answers = deque([Error.html_413(), Error.context_length_exceeded(), Reply("final answer")])

    def respond(body: dict[str, Any]) -> Behaviour:
        return Reply(FAKE_SUMMARY) if is_summary_call(body) else answers.popleft()

    async with FakeOpenAI(respond) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=8_000))
        async with running_app(config) as app:
            rng = random.Random(3)
            await seed_messages(app, [(PEOPLE[i % 8], prose(rng, 120)) for i in range(48)])
            session = await app.services.store.active_session(CHAT)
            assert 5_000 < session.active_tokens < 6_800  # under the threshold: no preflight
            adapter = RecordingAdapter()
            await app.gateway.handle(group_message("@bot summarize please"), adapter)
            await app.gateway.join()
            assert adapter.texts() == ["final answer"]
            assert not answers
            events = await app.services.store.list_compression_events(chat_key=CHAT)
            assert [(e.trigger, e.outcome) for e in events] == [
                ("overflow", "compressed"),
                ("overflow", "compressed"),
            ]


async def test_summary_401_leaves_transcript_unchanged_and_notifies_once(tmp_path: Path) -> None:
    def respond(body: dict[str, Any]) -> Behaviour:
        return Error.unauthorized() if is_summary_call(body) else Reply("fine")

    async with FakeOpenAI(respond) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=200_000))
        async with running_app(config) as app:
            store = app.services.store
            await store.set_chat_setting(CHAT, "hygiene_hard_message_limit", "40")
            session_id = await seed_messages(app, [("Bob", f"keep {i}") for i in range(45)])
            before = [m.id for m in await store.load_active(session_id)]
            adapter = RecordingAdapter()
            await app.gateway.handle(group_message("@bot one"), adapter)
            await app.gateway.handle(group_message("@bot two", author="Carol"), adapter)
            await app.gateway.join()

            after = [m.id for m in await store.load_active(session_id)]
            assert after[: len(before)] == before
            assert len(after) == len(before) + 4  # two questions, two answers
            notices = [t for t in adapter.texts() if "couldn't compact" in t]
            assert len(notices) == 1
            assert adapter.texts().count("fine") == 2


async def test_summary_server_error_falls_back_to_deterministic_summary(tmp_path: Path) -> None:
    def respond(body: dict[str, Any]) -> Behaviour:
        return Error.server_error() if is_summary_call(body) else Reply("ok")

    async with FakeOpenAI(respond) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=200_000))
        async with running_app(config) as app:
            store = app.services.store
            await store.set_chat_setting(CHAT, "hygiene_hard_message_limit", "40")
            rng = random.Random(5)
            session_id = await seed_messages(
                app,
                [(PEOPLE[i % 8], prose(rng)) for i in range(5)]  # the protected head
                + [("Bob", "we decided to ship on 2026-12-04")]
                + [(PEOPLE[i % 8], prose(rng)) for i in range(40)],
            )
            adapter = RecordingAdapter()
            await app.gateway.handle(group_message("@bot go"), adapter)
            await app.gateway.join()
            events = await store.list_compression_events(chat_key=CHAT)
            assert [(e.trigger, e.outcome) for e in events] == [("hygiene", "fallback")]
            summary = next(
                m.text for m in await store.load_active(session_id) if m.kind == "summary"
            )
            assert "automatic summary was unavailable" in summary
            assert "2026-12-04" in summary


async def test_restart_restores_compressor_state(tmp_path: Path) -> None:
    async with FakeOpenAI(summarizing_responder()) as fake:
        config = make_config(tmp_path, endpoint_env(fake.base_url, context_length=200_000))
        async with running_app(config) as app:
            store = app.services.store
            await store.set_chat_setting(CHAT, "hygiene_hard_message_limit", "40")
            await seed_messages(app, [("Bob", f"fact {i}") for i in range(45)])
            await app.gateway.handle(group_message("@bot hi"), RecordingAdapter())
            await app.gateway.join()
            before = (await store.active_session(CHAT)).compressor
        assert before.compression_count == 1
        async with running_app(config) as app:
            session = await app.services.store.active_session(CHAT)
            assert session.compressor == before
            compressor = app.services.compactor.build_compressor(
                app.services.compaction_settings(await app.services.settings_for(CHAT)),
                session.compressor,
                lambda *_: None,
            )
            assert compressor.compression_count == 1
            assert compressor.state.previous_summary == before.previous_summary


async def test_offline_model_answers_from_archived_history(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    async with running_app(config, llm=OfflineModel()) as app:
        store = app.services.store
        await seed_messages(
            app,
            [("Bob", "The deploy moves to Thursday after the database migration")]
            + [(PEOPLE[i % 8], prose(random.Random(i))) for i in range(40)],
        )
        adapter = RecordingAdapter(admins={"alice"})
        await app.gateway.handle(group_message("/compress"), adapter)
        await app.gateway.join()
        assert adapter.texts()[-1].startswith("🗜️ Compressed")
        bob_rows = [
            m
            for m in await store.load_history(CHAT, include_archived=True)
            if "database migration" in m.text and m.author_name == "Bob"
        ]
        assert bob_rows and not bob_rows[0].active

        await app.gateway.handle(group_message("@bot what did Bob say about the deploy?"), adapter)
        await app.gateway.join()
        answer = adapter.texts()[-1]
        assert "offline" in answer
        assert "Bob" in answer and "Thursday after the database migration" in answer


async def _wait_until(predicate, limit_seconds: float = 5.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit_seconds
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(0.01)

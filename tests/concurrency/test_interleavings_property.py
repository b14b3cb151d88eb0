"""A hypothesis-generated mix of messages, commands, turns, hygiene, overnight and CLI
compactions on several chats never breaks the invariants: arrival order, no loss, no
duplicate, running totals equal a recount, at most one compaction per session at a time."""

from __future__ import annotations

import asyncio
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiosqlite
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from compactbot.bot.app import App
from compactbot.bot.store.sqlite.store import SqliteStore
from compactbot.compression import SummaryRequest
from compactbot.scheduler.job import run_overnight
from tests.compression.scripted import FakeClock
from tests.concurrency.rig import BASE_SECTIONS, GatedLLM, chatter_text
from tests.harness import RecordingAdapter, group_message
from tests.reliability.rig import originals, yaml_config

CHATS = ("c0", "c1", "c2")
AUTHORS = ("Alice", "Bob")
SECTIONS = {
    **BASE_SECTIONS,
    "compression": {"protect_last_n": 5, "hygiene_hard_message_limit": 12},
    "bounds": {"hygiene_hard_message_limit": [10, 20000]},
}

TOTALS_AND_RECOUNT_SQL = (
    "SELECT s.active_tokens, s.active_messages,"
    " (SELECT coalesce(sum(m.tokens), 0) FROM messages m WHERE m.session_id = s.id AND m.active),"
    " (SELECT count(*) FROM messages m WHERE m.session_id = s.id AND m.active)"
    " FROM sessions s WHERE s.id = ?"
)

chats = st.sampled_from(CHATS)
authors = st.sampled_from(AUTHORS)


@dataclass
class Registry:
    """Who holds each session's compaction lease right now, across both processes' stores."""

    holders: dict[int, str] = field(default_factory=dict)
    overlaps: list[int] = field(default_factory=list)


class ProbeStore:
    """The real store; its lease transitions are recorded in a shared registry."""

    def __init__(self, inner: SqliteStore, registry: Registry) -> None:
        self._inner = inner
        self._registry = registry

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def acquire_lock(self, session_id: int, holder: str, ttl_seconds: float) -> bool:
        taken = await self._inner.acquire_lock(session_id, holder, ttl_seconds)
        if taken:
            if session_id in self._registry.holders:
                self._registry.overlaps.append(session_id)
            self._registry.holders[session_id] = holder
        return taken

    async def release_lock(self, session_id: int, holder: str) -> bool:
        released = await self._inner.release_lock(session_id, holder)
        if released and self._registry.holders.get(session_id) == holder:
            del self._registry.holders[session_id]
        return released

    async def archive_and_compact(self, session: Any, *args: Any, **kwargs: Any) -> Any:
        commit = await self._inner.archive_and_compact(session, *args, **kwargs)
        holder = kwargs.get("holder")
        if commit is not None and self._registry.holders.get(session.id) == holder:
            del self._registry.holders[session.id]
        return commit


class YieldingSummarizer:
    """Short summaries after a few loop turns, so other work interleaves with each one."""

    async def summarize(self, request: SummaryRequest) -> str:
        for _ in range(3):
            await asyncio.sleep(0)
        return "## Key facts\n- Deploys moved to new slots."


def factory(_usage: Any) -> YieldingSummarizer:
    return YieldingSummarizer()


class World:
    """The service (and a second "CLI" process on the same file) and what was sent to it."""

    def __init__(self, tmp: Path) -> None:
        config = yaml_config(tmp, SECTIONS)
        self.clock = FakeClock()
        self.registry = Registry()
        db = config.storage.database
        self.main, self.cli = (
            App(
                config,
                llm=GatedLLM(),
                clock=self.clock,
                store=ProbeStore(SqliteStore(db, clock=self.clock), self.registry),  # type: ignore[arg-type]
                summarizer_factory=factory,
            )
            for _ in range(2)
        )
        self.adapter = RecordingAdapter(admins={"alice"})
        self.sent: dict[str, list[str]] = defaultdict(list)  # chat -> platform ids, in order
        self.news_before: dict[str, int] = {}  # platform id -> /new commands before it
        self.news: dict[str, int] = defaultdict(int)
        self.tasks: list[asyncio.Task[Any]] = []
        self.step = 0
        self.db = db
        self.reader: aiosqlite.Connection | None = None

    async def open(self) -> None:
        await self.main.start()
        await self.cli.start()
        self.reader = await aiosqlite.connect(self.db)

    async def message(self, chat: str, author: str, addressed: bool) -> None:
        self.step += 1
        text = chatter_text(self.step) + (" @bot?" if addressed else "")
        message = group_message(text, chat_id=chat, author=author, addressed=addressed)
        await self.main.gateway.handle(message, self.adapter)
        assert message.platform_message_id is not None
        self.sent[chat].append(message.platform_message_id)
        self.news_before[message.platform_message_id] = self.news[chat]

    async def command(self, chat: str, name: str) -> None:
        await self.main.gateway.handle(group_message(f"/{name}", chat_id=chat), self.adapter)
        self.news[chat] += name == "new"

    async def overnight(self) -> None:
        self.clock.advance(120)
        job = run_overnight(self.main.services, ignore_window=True, jitter=lambda: 0)
        self.tasks.append(asyncio.create_task(job))

    async def cli_compaction(self, chat: str) -> None:
        services = self.cli.services
        session = await services.store.active_session(f"test:{chat}")
        settings = services.compaction_settings(await services.settings_for(session.chat_key))
        job = services.compactor.compact(
            session.id, trigger="manual", settings=settings, system_prompt="system", force=True
        )
        self.tasks.append(asyncio.create_task(job))

    async def check(self) -> None:
        """The invariants, which hold between any two transactions, settled or not."""
        assert self.registry.overlaps == [], "two compactions of one session at once"
        store = self.main.services.store
        for name in CHATS:
            key = f"test:{name}"
            history = await store.load_history(key)
            first = originals(history)
            # No loss, no duplicate original, arrival order kept.
            assert sorted(first, key=lambda p: first[p].id) == self.sent[name]
            sessions = [s.id for s in await store.list_sessions(key)]
            for session_id in sessions:
                live = [r.platform_message_id for r in await store.load_active(session_id)]
                ids = [p for p in live if p is not None and p in first]
                assert len(ids) == len(set(ids)), "a message is live twice"
                assert ids == [p for p in self.sent[name] if p in set(ids)], "live order broken"
            # /new took effect exactly for the messages after it.
            for pid in self.sent[name]:
                assert sessions.index(first[pid].session_id) == self.news_before[pid]
            await self.assert_totals_match_a_recount(sessions)

    async def assert_totals_match_a_recount(self, sessions: list[int]) -> None:
        # One statement, one snapshot: background work may commit between two separate reads.
        assert self.reader is not None
        for session_id in sessions:
            rows = await self.reader.execute_fetchall(TOTALS_AND_RECOUNT_SQL, (session_id,))
            tokens, count, recounted_tokens, recounted = next(iter(rows))
            assert (tokens, count) == (recounted_tokens, recounted), f"session {session_id}"

    async def close(self) -> None:
        try:
            await asyncio.gather(*self.tasks)
            await self.main.gateway.join()
            await self.check()
        finally:
            if self.reader is not None:
                await self.reader.close()
            await self.cli.close()
            await self.main.close()


class Interleavings(RuleBasedStateMachine):
    """Rules run one at a time; between them the background work (turns, hygiene, /compress,
    overnight and CLI compactions) is paused, and it moves on during the next rule."""

    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory()
        self._loop = asyncio.new_event_loop()
        self.world = World(Path(self._tmp.name))
        self._run(self.world.open())

    def _run(self, work: Any) -> Any:
        return self._loop.run_until_complete(work)

    @rule(chat=chats, author=authors, addressed=st.booleans())
    def message(self, chat: str, author: str, addressed: bool) -> None:
        self._run(self.world.message(chat, author, addressed))

    @rule(chat=chats, name=st.sampled_from(("new", "compress")))
    def command(self, chat: str, name: str) -> None:
        self._run(self.world.command(chat, name))

    @rule()
    def overnight(self) -> None:
        self._run(self.world.overnight())

    @rule(chat=chats)
    def cli_compaction(self, chat: str) -> None:
        self._run(self.world.cli_compaction(chat))

    @rule(turns=st.integers(1, 30))
    def let_background_work_run(self, turns: int) -> None:
        async def spin() -> None:
            for _ in range(turns):
                await asyncio.sleep(0)

        self._run(spin())

    @invariant()
    def invariants_hold(self) -> None:
        self._run(self.world.check())

    def teardown(self) -> None:
        try:
            self._run(self.world.close())
        finally:
            self._loop.close()
            self._tmp.cleanup()


Interleavings.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
test_interleavings_never_break_order_loss_duplicates_totals_or_exclusivity = Interleavings.TestCase

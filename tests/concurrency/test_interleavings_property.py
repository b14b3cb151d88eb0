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

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.app import App
from bot.store.sqlite import SqliteStore
from compression import SummaryRequest
from scheduler.job import run_overnight
from tests.compression.scripted import FakeClock
from tests.concurrency.rig import BASE_SECTIONS, GatedLLM, chatter_text
from tests.harness import RecordingAdapter, group_message
from tests.reliability.rig import assert_totals_match_recount, originals, yaml_config

CHATS = ("c0", "c1", "c2")
AUTHORS = ("Alice", "Bob")
SECTIONS = {
    **BASE_SECTIONS,
    "compression": {"protect_last_n": 5, "hygiene_hard_message_limit": 12},
    "bounds": {"hygiene_hard_message_limit": [10, 20000]},
}

chat = st.sampled_from(range(len(CHATS)))
action = st.one_of(
    st.tuples(st.just("message"), chat, st.sampled_from(range(len(AUTHORS))), st.booleans()),
    st.tuples(st.just("new"), chat),
    st.tuples(st.just("compress"), chat),
    st.tuples(st.just("overnight")),
    st.tuples(st.just("cli"), chat),
    st.tuples(st.just("yield"), st.integers(1, 20)),
)


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


async def scenario(tmp: Path, program: list[tuple[Any, ...]]) -> None:
    config = yaml_config(tmp, SECTIONS)
    clock = FakeClock()
    registry = Registry()
    db = config.storage.database
    main = App(
        config,
        llm=GatedLLM(),
        clock=clock,
        store=ProbeStore(SqliteStore(db, clock=clock), registry),  # type: ignore[arg-type]
        summarizer_factory=factory,
    )
    cli = App(
        config,
        llm=GatedLLM(),
        clock=clock,
        store=ProbeStore(SqliteStore(db, clock=clock), registry),  # type: ignore[arg-type]
        summarizer_factory=factory,
    )
    adapter = RecordingAdapter(admins={"alice"})
    sent: dict[str, list[str]] = defaultdict(list)  # chat -> platform ids in arrival order
    news_before: dict[str, int] = {}  # platform id -> how many /new preceded it in its chat
    news: dict[str, int] = defaultdict(int)
    tasks: list[asyncio.Task[Any]] = []
    async with main, cli:
        services = main.services
        for step, act in enumerate(program):
            kind = act[0]
            if kind == "message":
                _, c, a, addressed = act
                text = chatter_text(step) + (" @bot?" if addressed else "")
                message = group_message(
                    text, chat_id=CHATS[c], author=AUTHORS[a], addressed=addressed
                )
                await main.gateway.handle(message, adapter)
                assert message.platform_message_id is not None
                sent[CHATS[c]].append(message.platform_message_id)
                news_before[message.platform_message_id] = news[CHATS[c]]
            elif kind in ("new", "compress"):
                await main.gateway.handle(group_message(f"/{kind}", chat_id=CHATS[act[1]]), adapter)
                news[CHATS[act[1]]] += kind == "new"
            elif kind == "overnight":
                clock.advance(120)
                tasks.append(
                    asyncio.create_task(
                        run_overnight(services, ignore_window=True, jitter=lambda: 0)
                    )
                )
            elif kind == "cli":
                session = await cli.services.store.active_session(f"test:{CHATS[act[1]]}")
                tasks.append(
                    asyncio.create_task(
                        cli.services.compactor.compact(
                            session.id,
                            trigger="manual",
                            settings=cli.services.compaction_settings(
                                await cli.services.settings_for(session.chat_key)
                            ),
                            system_prompt="system",
                            force=True,
                        )
                    )
                )
            else:
                for _ in range(act[1]):
                    await asyncio.sleep(0)
        await asyncio.gather(*tasks)
        await main.gateway.join()
        store = services.store
        for name in CHATS:
            key = f"test:{name}"
            history = await store.load_history(key)
            first = originals(history)
            # No loss, no duplicate original, and arrival order kept.
            assert sorted(first) == sorted(sent[name])
            assert sorted(first, key=lambda p: first[p].id) == sent[name]
            sessions = sorted({row.session_id for row in history} | set())
            for session_id in sessions:
                live = [r.platform_message_id for r in await store.load_active(session_id)]
                ids = [p for p in live if p is not None and p in first]
                assert len(ids) == len(set(ids)), "a message is live twice"
                assert ids == [p for p in sent[name] if p in set(ids)], "live order broken"
            # /new took effect exactly for the messages after it.
            all_sessions = [s.id for s in await store.list_sessions(key)]
            for pid in sent[name]:
                assert all_sessions.index(first[pid].session_id) == news_before[pid]
            await assert_totals_match_recount(store, all_sessions)
    assert registry.overlaps == [], "two compactions of one session at once"


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(st.lists(action, min_size=1, max_size=40))
def test_interleavings_never_break_order_loss_duplicates_totals_or_exclusivity(
    program: list[tuple[Any, ...]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(scenario(Path(tmp), program))

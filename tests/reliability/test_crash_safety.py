"""Crash safety: SIGKILL a real process while it stores messages and compacts a real database file.

After each kill the database is reopened in this process and checked: every message the driver
reported as stored is there (live or archived) with its exact text, no compaction (nor its
memory, with its supersessions) is half applied, running totals match a recount, the lock left
behind expires, and compaction works again.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import signal
import sys
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

from compactbot.bot.app import App, database_path
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.settings.config import Config
from compactbot.bot.store.base import StoredMessage
from compactbot.bot.store.sqlite.store import SqliteStore
from tests.harness import RecordingAdapter
from tests.reliability.crash_driver import (
    CHAT_KEY,
    COMPACT_EVERY_MESSAGES,
    build_tag,
    inbound,
    message_text,
)
from tests.reliability.rig import assert_totals_match_recount, originals, yaml_config

REPO_ROOT = Path(__file__).resolve().parents[2]
# Short so a dead holder's lock expires within the test; the driver renews every second.
LOCK_TTL_SECONDS = 3.0
# Interpreter start plus imports on a shared 2-core machine.
READY_SECONDS = 30.0
KILL_AFTER_SECONDS = (0.05, 0.6)
# Enough messages before the hanging compaction that a rerun has something to shrink.
HANG_AFTER_MESSAGES = 28
CHANGED_LINES = ("compacted compressed", "compacted fallback")
SECTIONS = {
    "compression": {"lock_ttl_seconds": LOCK_TTL_SECONDS, "protect_first_n": 1, "protect_last_n": 5}
}


@dataclass
class DriverRun:
    """What one killed driver said before it died."""

    stored: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


@contextlib.asynccontextmanager
async def driver(
    config: Config,
    config_path: Path,
    start: int,
    *,
    seed: int,
    hang: bool = False,
    compact_every: int = COMPACT_EVERY_MESSAGES,
) -> AsyncIterator[tuple[asyncio.subprocess.Process, DriverRun]]:
    args = ["--db", config.storage.database, "--config", str(config_path), "--start", str(start)]
    args += ["--seed", str(seed), "--compact-every", str(compact_every)]
    args += ["--hang-summary"] if hang else []
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.reliability.crash_driver",
        *args,
        cwd=REPO_ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        yield process, DriverRun()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


async def read_until(process: asyncio.subprocess.Process, run: DriverRun, wanted: str) -> None:
    assert process.stdout is not None
    while True:
        raw = await asyncio.wait_for(process.stdout.readline(), READY_SECONDS)
        assert raw, f"driver exited before printing {wanted!r}: {run.lines[-5:]}"
        _note(run, raw)
        if raw.decode().strip() == wanted:
            return


async def kill_and_collect(process: asyncio.subprocess.Process, run: DriverRun) -> None:
    process.send_signal(signal.SIGKILL)
    assert process.stdout is not None
    for raw in (await process.stdout.read()).splitlines():
        _note(run, raw)
    assert await process.wait() == -signal.SIGKILL


def _note(run: DriverRun, raw: bytes) -> None:
    line = raw.decode().strip()
    run.lines.append(line)
    if line.startswith("stored "):
        run.stored.append(line.removeprefix("stored "))


async def check_consistent(app: App, reported: list[str]) -> list[StoredMessage]:
    """The invariants a kill at any point must leave intact; returns the chat's rows."""
    store = app.services.store
    rows = await store.load_history(CHAT_KEY, include_archived=True)
    users = [r for r in rows if r.role == "user" and r.kind == "message"]
    first = originals(users)
    # Every message reported as written is there, with its exact text, live or archived.
    assert set(reported) <= set(first)
    for pmid, row in first.items():
        assert row.text.endswith(message_text(int(pmid[1:]))), pmid
    assert [r.platform_message_id for r in sorted(first.values(), key=lambda r: r.id)] == sorted(
        first, key=lambda p: int(p[1:])
    )
    live = [r for r in rows if r.active]
    # A tail message the summary was merged into is stored without its platform id.
    live_users = Counter(r.platform_message_id for r in live if r.platform_message_id)
    # Never both: an original and its compacted copy are not live together.
    assert all(n == 1 for n in live_users.values()), live_users.most_common(3)
    summaries = [r for r in live if r.kind == "summary"]
    assert len(summaries) <= 1, "duplicated summary in the live transcript"
    # Never neither: an archived message is covered by the live summary or a live copy.
    archived = [p for p, r in first.items() if not r.active and p not in live_users]
    if archived:
        assert summaries, f"{len(archived)} archived messages and no live summary"
        assert all(first[p].compacted for p in archived)
    live_ids = [int(p[1:]) for r in live if (p := r.platform_message_id)]
    assert live_ids == sorted(live_ids), "live order broken"
    await assert_totals_match_recount(store, sorted({r.session_id for r in rows}))
    await check_memory(app, [int(p[1:]) for p in archived])
    return rows


async def check_memory(app: App, summarised: list[int]) -> None:
    """The memory is exactly what the last committed compaction wrote: one current build tag,
    the newest summarised one; every older one superseded by a newer entry that exists."""
    store = app.services.store
    memory = await store.load_memory((await store.active_session(CHAT_KEY)).id)
    tags = [e for e in memory.entries if e.subject == "build tag"]
    if not summarised:
        assert not tags
        return
    current = [e for e in tags if e.status == "current"]
    assert len(current) == 1, [e.text for e in current]
    assert build_tag(max(summarised)) in current[0].text
    ids = {e.id for e in memory.entries}
    for entry in tags:
        if entry.status == "superseded":
            assert entry.superseded_by in ids and entry.superseded_by > entry.id


async def compact_again(app: App) -> str:
    services = app.services
    session = await services.store.active_session(CHAT_KEY)
    report = await services.compactor.compact(
        session.id,
        trigger="manual",
        settings=services.compaction_settings(await services.settings_for(CHAT_KEY)),
        system_prompt=await services.system_prompt_for(CHAT_KEY),
        force=True,
    )
    return report.outcome


async def wait_out_lock(app: App) -> None:
    store = app.services.store
    session = await store.active_session(CHAT_KEY)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + LOCK_TTL_SECONDS * 3
    while await store.lock_holder(session.id) is not None:
        assert loop.time() < deadline, "the dead process's lock never expired"
        await asyncio.sleep(0.1)


def next_index(rows: list[StoredMessage]) -> int:
    ids = [int(r.platform_message_id[1:]) for r in rows if r.platform_message_id]
    return max(ids, default=-1) + 1


async def test_sigkill_at_random_points_loses_no_message_nor_half_applies_a_compaction_or_memory(
    tmp_path: Path,
) -> None:
    config = yaml_config(tmp_path, SECTIONS)
    config_path = tmp_path / "config.yaml"
    rng = random.Random(20240601)
    reported: list[str] = []
    compactions = 0
    start = 0
    for iteration in range(4):
        async with driver(config, config_path, start, seed=iteration) as (process, run):
            await read_until(process, run, "ready")
            await asyncio.sleep(rng.uniform(*KILL_AFTER_SECONDS))
            await kill_and_collect(process, run)
        reported += run.stored
        compactions += sum(line in CHANGED_LINES for line in run.lines)
        async with App(config, llm=OfflineModel()) as app:
            rows = await check_consistent(app, reported)
            start = next_index(rows)
    # Coverage, not behaviour: the kills landed among real compactions. After a kill mid-way,
    # the next driver reclaims the dead holder's lease at start-up.
    assert len(reported) > 20 and compactions >= 1, (len(reported), compactions)
    async with App(config, llm=OfflineModel()) as app:
        await wait_out_lock(app)
        # New messages give the rerun something to shrink; the session must not be wedged.
        for index in range(start, start + HANG_AFTER_MESSAGES):
            await app.gateway.handle(inbound(index), RecordingAdapter())
            reported.append(f"p{index}")
        assert await compact_again(app) in ("compressed", "fallback")
        await check_consistent(app, reported)


async def test_stale_lease_of_a_killed_process_is_reclaimed_at_startup(
    tmp_path: Path,
) -> None:
    config = yaml_config(tmp_path, SECTIONS)
    config_path = tmp_path / "config.yaml"
    hanging = driver(config, config_path, 0, seed=1, hang=True, compact_every=HANG_AFTER_MESSAGES)
    async with hanging as (process, run):
        await read_until(process, run, "summarizing")
        await kill_and_collect(process, run)
    assert len(run.stored) == HANG_AFTER_MESSAGES and not any(
        line.startswith("compacted") for line in run.lines
    )

    async with SqliteStore(database_path(config)) as raw:
        session = await raw.active_session(CHAT_KEY)
        assert await raw.lock_holder(session.id) is not None  # the dead process's lease

    async with App(config, llm=OfflineModel()) as app:
        store = app.services.store
        # Start-up saw the holder's process is gone: no waiting out the TTL.
        assert await store.lock_holder(session.id) is None
        rows = await check_consistent(app, run.stored)
        assert all(r.active for r in rows), "a compaction that never committed archived rows"
        assert await compact_again(app) in ("compressed", "fallback")
        rows = await check_consistent(app, run.stored)
        assert sum(r.kind == "summary" and r.active for r in rows) == 1
        assert any(not r.active for r in rows)

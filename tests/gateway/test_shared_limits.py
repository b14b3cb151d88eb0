"""Limits shared by workers: two services on one database enforce one limit, not two (SPEC 15)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from compactbot.bot.app import App
from compactbot.bot.ingress.admin_cache import AdminCache
from compactbot.bot.ingress.limits import NoticeGate, RateLimiter
from compactbot.bot.store import SqliteStore
from compactbot.bot.turns.failure_notices import REPEAT_NOTICE, FailureNotices
from tests import postgres_server
from tests.harness import RecordingAdapter, group_message, make_config
from tests.reliability.rig import EchoLLM

CHAT = "test:g1"
SLOW_DOWN = "faster than I can answer"
FAILED = "⚠️ The model endpoint is down."


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=("sqlite", "postgresql"))
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """COMPACTBOT_DB for two workers sharing one database."""
    if request.param == "sqlite":
        yield str(tmp_path / "shared.db")
        return
    async with postgres_server.fresh_schema(postgres_server.require_server()) as dsn:
        yield dsn


async def test_two_workers_answer_a_member_no_faster_than_one_limit(
    database: str, tmp_path: Path
) -> None:
    clock = Clock()
    config = make_config(tmp_path, {"COMPACTBOT_DB": database})
    first_llm, second_llm = EchoLLM(), EchoLLM()
    async with (
        App(config, llm=first_llm, clock=clock) as first,
        App(config, llm=second_llm, clock=clock) as second,
    ):
        await first.services.store.set_chat_setting(CHAT, "user_rate_limit_per_minute", "3")
        adapter = RecordingAdapter()
        # Bob's questions alternate between the workers, as a load balancer would spread them.
        for i in range(8):
            app = (first, second)[i % 2]
            await app.gateway.handle(group_message(f"@bot question {i}", author="Bob"), adapter)
            await app.gateway.join()

        assert len(first_llm.requests) + len(second_llm.requests) == 3
        assert sum(SLOW_DOWN in text for text in adapter.texts()) == 1  # said once, by one


async def test_a_failure_explained_by_one_worker_is_not_explained_again_by_another(
    tmp_path: Path,
) -> None:
    clock = Clock()
    path = tmp_path / "shared.db"
    async with SqliteStore(path) as one, SqliteStore(path) as other:
        first, second = FailureNotices(one, clock=clock), FailureNotices(other, clock=clock)

        assert await first.notice_for(CHAT, FAILED) == FAILED
        assert await second.notice_for(CHAT, FAILED) == REPEAT_NOTICE
        await second.recovered(CHAT)  # the other worker answered in between
        assert await first.notice_for(CHAT, FAILED) == FAILED
        clock.now += 600
        assert await second.notice_for(CHAT, FAILED) == FAILED


async def test_admin_answers_are_cached_for_their_ttl_and_not_at_all_with_zero(
    tmp_path: Path,
) -> None:
    clock = Clock()
    async with SqliteStore(tmp_path / "shared.db") as store:
        cache = AdminCache(store, 300, clock=clock)
        await cache.put("telegram", "-100", "7", True)
        assert await cache.get("telegram", "-100", "7") is True
        assert await cache.get("telegram", "-100", "8") is None
        clock.now += 300
        assert await cache.get("telegram", "-100", "7") is None

        uncached = AdminCache(store, 0, clock=clock)
        await uncached.put("telegram", "-100", "9", True)
        assert await uncached.get("telegram", "-100", "9") is None


class BrokenLimits:
    """A store whose limit tables cannot be reached."""

    async def rate_hit(self, key: str, per_minute: int, now: float) -> bool:
        raise OSError("connection reset")

    async def notice_first(self, scope: str, key: str, interval_seconds: float, now: float) -> bool:
        raise OSError("connection reset")

    async def notice_reset(self, scope: str) -> None:
        raise OSError("connection reset")

    async def cached_admin(self, key: str, now: float) -> bool | None:
        raise OSError("connection reset")

    async def cache_admin(self, key: str, is_admin: bool, expires_at: float) -> None:
        raise OSError("connection reset")


async def test_a_limit_the_store_cannot_check_lets_the_stored_question_be_answered() -> None:
    broken = BrokenLimits()
    assert await RateLimiter(broken).allow((CHAT, "bob"), 1)
    assert await NoticeGate(broken, "rate", 60.0).first((CHAT, "bob"))
    notices = FailureNotices(broken)
    assert await notices.notice_for(CHAT, FAILED) == FAILED
    await notices.recovered(CHAT)  # logged, not raised: the answer is already out

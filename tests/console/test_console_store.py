"""The console's records on both backends: sessions, one-time links (used once), the audit log."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from compactbot.bot.operators.console.auth import OperatorTokens, new_secret, secret_hash
from compactbot.bot.operators.console.sessions import SignIn, SignInRefused, TooManyAttempts
from compactbot.bot.settings.config import ConsoleConfig
from compactbot.bot.store import PostgresStore, SqliteStore
from compactbot.bot.store.protocols.console_records import AuditEntry, ConsoleSession
from tests import postgres_server

NOW = 1_800_000_000.0
TOKEN = "ops-token-0123456789abcdef"


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture(params=["sqlite", "postgresql"])
async def location(request: Any, tmp_path: Path) -> AsyncIterator[str]:
    """The database the stores of a test open: every one of them sees the same rows."""
    if request.param == "sqlite":
        yield str(tmp_path / "console.db")
        return
    async with postgres_server.fresh_schema(postgres_server.require_server()) as dsn:
        yield dsn


def _open(location: str) -> Any:
    return PostgresStore(location) if location.startswith("postgresql") else SqliteStore(location)


@pytest.fixture
async def store(location: str) -> AsyncIterator[Any]:
    async with _open(location) as opened:
        yield opened


async def test_a_session_signed_in_on_one_worker_is_honoured_by_another(
    store: Any, location: str
) -> None:
    clock = Clock()
    viewer = await _sign_in(store, clock).with_token(TOKEN, "203.0.113.9")
    async with _open(location) as other_worker:
        assert await _sign_in(other_worker, clock).viewer(viewer.secret) == viewer
        await _sign_in(other_worker, clock).sign_out(viewer)
    assert await _sign_in(store, clock).viewer(viewer.secret) is None


def _sign_in(store: Any, clock: Clock, attempts: int = 10) -> SignIn:
    config = ConsoleConfig(sign_in_attempts_per_minute=attempts, session_hours=1, link_minutes=15)
    return SignIn(store, store, OperatorTokens({"ops": TOKEN}), config, clock)


async def test_a_session_is_found_by_its_hash_until_it_expires_or_is_closed(store: Any) -> None:
    secret = new_secret()
    session = ConsoleSession("ops", "operator", None, NOW, NOW + 60)
    await store.open_console_session(secret_hash(secret), session)
    assert await store.console_session(secret_hash(secret), NOW + 1) == session
    assert await store.console_session(secret, NOW + 1) is None  # the raw secret is not a key
    assert await store.console_session(secret_hash(secret), NOW + 60) is None
    await store.close_console_session(secret_hash(secret))
    assert await store.console_session(secret_hash(secret), NOW + 1) is None


async def test_a_link_opens_one_chat_admin_session_for_its_chat_once(store: Any) -> None:
    link = new_secret()
    await store.add_sign_in_link(
        secret_hash(link), "telegram:-1", "Ann (telegram:7)", NOW, NOW + 900
    )
    first = await store.redeem_sign_in_link(secret_hash(link), secret_hash("s1"), NOW + 5, NOW + 99)
    assert first == ConsoleSession(
        "Ann (telegram:7)", "chat_admin", "telegram:-1", NOW + 5, NOW + 99
    )
    assert await store.console_session(secret_hash("s1"), NOW + 6) == first
    again = await store.redeem_sign_in_link(secret_hash(link), secret_hash("s2"), NOW + 6, NOW + 99)
    assert again is None
    assert await store.console_session(secret_hash("s2"), NOW + 7) is None


async def test_two_redeems_of_one_link_at_once_open_one_session(store: Any) -> None:
    link = new_secret()
    await store.add_sign_in_link(secret_hash(link), "telegram:-1", "Ann", NOW, NOW + 900)
    results = await asyncio.gather(
        *(
            store.redeem_sign_in_link(secret_hash(link), secret_hash(f"s{i}"), NOW + 1, NOW + 99)
            for i in range(4)
        )
    )
    assert sum(r is not None for r in results) == 1


async def test_an_expired_link_opens_nothing(store: Any) -> None:
    link = new_secret()
    await store.add_sign_in_link(secret_hash(link), "telegram:-1", "Ann", NOW, NOW + 900)
    assert await store.redeem_sign_in_link(secret_hash(link), "x", NOW + 900, NOW + 999) is None


async def test_the_audit_log_pages_back_from_the_newest_and_filters_by_chat(store: Any) -> None:
    for i in range(5):
        chat = "telegram:-1" if i % 2 == 0 else "telegram:-2"
        await store.record_audit(AuditEntry(NOW + i, "ops", "operator", "setting", f"n={i}", chat))
    newest = await store.list_audit(limit=2)
    assert [e.detail for e in newest] == ["n=4", "n=3"]
    older = await store.list_audit(limit=2, before_id=newest[-1].id)
    assert [e.detail for e in older] == ["n=2", "n=1"]
    assert [e.detail for e in await store.list_audit(chat_key="telegram:-1")] == [
        "n=4",
        "n=2",
        "n=0",
    ]


async def test_operator_sign_in_writes_a_session_and_an_audit_row(store: Any) -> None:
    sign_in = _sign_in(store, Clock())
    viewer = await sign_in.with_token(TOKEN, "203.0.113.9")
    assert viewer.operator and viewer.who == "ops"
    assert await sign_in.viewer(viewer.secret) == viewer
    assert [(e.who, e.action) for e in await store.list_audit()] == [("ops", "sign in")]
    with pytest.raises(SignInRefused):
        await sign_in.with_token("ops-token-0123456789abcdeX", "203.0.113.9")


async def test_sign_in_attempts_are_limited_per_address_in_the_store(store: Any) -> None:
    clock = Clock()
    sign_in = _sign_in(store, clock, attempts=3)
    other_worker = _sign_in(store, clock, attempts=3)  # a second process shares the limit
    for attempt in range(3):
        with pytest.raises(SignInRefused) as refused:
            await (sign_in if attempt % 2 else other_worker).with_token("wrong", "198.51.100.1")
        assert not isinstance(refused.value, TooManyAttempts)
    with pytest.raises(TooManyAttempts):
        await sign_in.with_token(TOKEN, "198.51.100.1")  # even the right token now waits
    assert (await sign_in.with_token(TOKEN, "198.51.100.2")).operator  # another address
    clock.now += 61
    assert (await sign_in.with_token(TOKEN, "198.51.100.1")).operator

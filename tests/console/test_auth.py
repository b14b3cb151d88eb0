"""Unit tests of the console's secrets: digests, constant-time matching, CSRF tokens, forwarding."""

from __future__ import annotations

import hmac
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

from compactbot.bot.operators.console import auth
from compactbot.bot.operators.console.auth import (
    OperatorTokens,
    csrf_token,
    new_secret,
    same_secret,
    secret_hash,
)
from compactbot.bot.operators.console.proxy import client_address, is_https

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef00"


def test_operator_tokens_are_kept_only_as_digests() -> None:
    tokens = OperatorTokens({"alice": ALICE, "bob": BOB})
    kept = repr(vars(tokens))
    assert ALICE not in kept and BOB not in kept
    assert ALICE.encode() not in b"".join(d for _, d in tokens._digests)


def test_a_token_signs_in_its_operator_and_nothing_close_to_it_does() -> None:
    tokens = OperatorTokens({"alice": ALICE, "bob": BOB})
    assert tokens.match(ALICE) == "alice"
    assert tokens.match(BOB) == "bob"
    for wrong in (ALICE[:-1], ALICE + "x", ALICE.upper(), "", " " + ALICE):
        assert tokens.match(wrong) is None


def test_every_configured_digest_is_compared_even_after_a_match(monkeypatch: Any) -> None:
    calls: list[tuple[bytes, bytes]] = []
    real = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    tokens = OperatorTokens({"alice": ALICE, "bob": BOB, "carol": "carol-token-0123456789abcd"})
    assert tokens.match(ALICE) == "alice"
    assert len(calls) == 3  # no early exit: the time taken does not say which token matched
    calls.clear()
    assert tokens.match("nobody-token-0123456789abcd") is None
    assert len(calls) == 3


def test_csrf_token_belongs_to_its_session_and_is_compared_safely() -> None:
    first, second = new_secret(), new_secret()
    assert first != second and len(first) == 64
    assert csrf_token(first) == csrf_token(first)
    assert csrf_token(first) != csrf_token(second)
    assert csrf_token(first) not in (first, secret_hash(first))
    assert same_secret(csrf_token(first), csrf_token(first))
    assert not same_secret(csrf_token(second), csrf_token(first))
    assert not same_secret(None, csrf_token(first))
    assert not same_secret("", csrf_token(first))


def test_the_store_keeps_a_hash_of_each_secret_not_the_secret() -> None:
    secret = new_secret()
    assert secret_hash(secret) != secret
    assert secret_hash(secret) == secret_hash(secret)


def _request(headers: dict[str, str], peer: str) -> Any:
    request = make_mocked_request("GET", "/console/", headers=headers)
    request._transport_peername = (peer, 50000)  # type: ignore[attr-defined]
    return request


@pytest.mark.parametrize(
    ("peer", "trusted", "https", "client"),
    [
        ("127.0.0.1", frozenset({"127.0.0.1"}), True, "203.0.113.9"),
        ("198.51.100.7", frozenset({"127.0.0.1"}), False, "198.51.100.7"),
        ("127.0.0.1", frozenset(), False, "127.0.0.1"),
    ],
)
def test_forwarded_headers_are_believed_only_from_a_trusted_proxy(
    peer: str, trusted: frozenset[str], https: bool, client: str
) -> None:
    headers = {"X-Forwarded-Proto": "https", "X-Forwarded-For": "6.6.6.6, 203.0.113.9"}
    request = _request(headers, peer)
    assert request.remote == peer
    assert is_https(request, trusted) is https
    assert client_address(request, trusted) == client

"""Secrets never reach a summarizer or a summary: each key format, idempotence, valid JSON."""

from __future__ import annotations

import json

import pytest

from compactbot.compression.redact import REDACTED, redact, redact_value

# Fake keys in each provider's documented shape; none of them is real.
SECRETS = {
    "openai": "sk-abcdefghijklmnopqrstuvwxyz0123456789ABCD",
    "openai_project": "sk-proj-Abc123_def456-GHI789jkl012MNO345pqr",
    "anthropic": "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789",
    "github_pat_classic": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_oauth": "gho_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_user": "ghu_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_server": "ghs_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_refresh": "ghr_abcdefghijklmnopqrstuvwxyz0123456789",
    "github_fine_grained": "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789",
    "slack_bot": "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "slack_user": "xoxp-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "google": "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    "telegram": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw1",
    "discord": "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz0123456",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "stripe": "sk_live_abcdefghijklmnop0123456789",
}


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_provider_key_is_masked(kind: str) -> None:
    secret = SECRETS[kind]
    masked = redact(f"my key is {secret} thanks")
    assert secret not in masked
    assert REDACTED in masked
    assert masked.startswith("my key is ") and masked.endswith(" thanks")


def test_bearer_token_keeps_the_scheme_word() -> None:
    masked = redact("curl -H 'Authorization: Bearer abcDEF123456ghiJKL789mno'")
    assert "abcDEF123456ghiJKL789mno" not in masked
    assert "Bearer [REDACTED]" in masked


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("password=hunter2secret", "hunter2secret"),
        ("DB_PASSWORD=s3cr3t!x", "s3cr3t!x"),
        ("passwd: opensesame", "opensesame"),
        ('{"password": "correct horse"}', "correct horse"),
        ("api_key='abc123xyz'", "abc123xyz"),
        ("the wifi password is Tr0ub4dor", "Tr0ub4dor"),
    ],
)
def test_password_assignment_is_masked(text: str, secret: str) -> None:
    masked = redact(text)
    assert secret not in masked
    assert REDACTED in masked


def test_json_password_stays_valid_json() -> None:
    masked = redact('{"user": "bob", "password": "p\\"w"}')
    assert json.loads(masked) == {"user": "bob", "password": REDACTED}


def test_url_credentials_are_masked_and_the_host_kept() -> None:
    masked = redact("clone https://bob:s3cretpw@git.example.com/repo.git now")
    assert "s3cretpw" not in masked and "bob:" not in masked
    assert "https://[REDACTED]@git.example.com/repo.git" in masked


def test_private_key_block_is_masked() -> None:
    block = (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabcdef\n-----END RSA PRIVATE KEY-----"
    )
    masked = redact(f"key:\n{block}\nend")
    assert "MIIEowIBAAKCAQEA" not in masked
    assert masked == f"key:\n{REDACTED}\nend"


def test_truncated_private_key_block_is_masked_to_the_end() -> None:
    assert "MIIEow" not in redact("-----BEGIN OPENSSH PRIVATE KEY-----\nMIIEowIBAAKCAQEA")


def test_redaction_is_idempotent() -> None:
    text = " ".join(SECRETS.values()) + " password=abc https://u:p@h.io Bearer " + "x" * 20
    once = redact(text)
    assert redact(once) == once


def test_ordinary_chat_text_is_untouched() -> None:
    text = (
        "Meet at 12:30 on 2026-11-02, budget $5,000; see https://example.com/a?b=1 — bearer bonds"
    )
    assert redact(text) == text


def test_tool_arguments_stay_valid_json() -> None:
    arguments = json.dumps(
        {"url": "https://u:pw123@api.example.com", "headers": {"api_key": "k-1"}, "n": 3}
    )
    cleaned = redact_value(arguments)
    parsed = json.loads(cleaned)
    assert parsed["headers"]["api_key"] == REDACTED
    assert parsed["url"] == "https://[REDACTED]@api.example.com"
    assert parsed["n"] == 3


def test_clean_json_string_is_returned_byte_identical() -> None:
    arguments = '{"q":  "weather in Paris"}'
    assert redact_value(arguments) is arguments


def test_redact_value_recurses_through_containers() -> None:
    value = {"list": [SECRETS["openai"], 1, None], "nested": {"password": "x1"}}
    cleaned = redact_value(value)
    assert cleaned == {"list": [REDACTED, 1, None], "nested": {"password": REDACTED}}
    assert value["nested"] == {"password": "x1"}  # the input is not mutated


AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"aws key AKIAIOSFODNN7EXAMPLE and secret {AWS_SECRET}", AWS_SECRET),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", AWS_SECRET),
        (f"aws_secret_access_key: {AWS_SECRET}", AWS_SECRET),
        ("AccountKey=abcdefghijklmnopqrstuvwxyz0123456789ABCD==;Endpoint=x", "abcdefghijklmnop"),
        ("deploy with glpat-abcdefghijklmnopqrstuv now", "glpat-abcdefghij"),
        ("npm_abcdefghijklmnopqrstuvwxyz0123456789 in .npmrc", "npm_abcdefghij"),
        ("SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", "SG.abcdefgh"),
        ("token ya29.a0AfH6SMBabcdefghijklmnopqrstuv", "ya29.a0AfH6"),
        ("twilio SK0123456789abcdef0123456789abcdef", "SK0123456789"),
    ],
)
def test_cloud_and_registry_credentials_are_masked(text: str, secret: str) -> None:
    masked = redact(text)
    assert secret not in masked and REDACTED in masked


def test_a_lower_case_commit_id_is_kept_and_a_bare_aws_secret_is_masked() -> None:
    commit = "0123456789abcdef0123456789abcdef01234567"
    assert redact(f"aws deploy of commit {commit}") == f"aws deploy of commit {commit}"
    assert redact(f"the value {AWS_SECRET} alone") == f"the value {REDACTED} alone"


def test_a_password_holding_an_ampersand_is_masked_whole() -> None:
    assert redact("password: Tr0ub4dor&3") == f"password: {REDACTED}"
    # A query string's next parameter is not part of the password.
    assert redact("?password=hunter2&user=bob") == f"?password={REDACTED}&user=bob"

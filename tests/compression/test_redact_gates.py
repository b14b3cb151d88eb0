"""The cheap gates in front of the secret patterns never change what redact() returns."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from compactbot.compression.redact import RULES, redact
from tests.compression.test_redact import SECRETS

# Pieces of every pattern (and re's non-ASCII case equivalents of i, s and k), so random
# texts often come close to a secret, hit a gate and miss the pattern, or match it.
FRAGMENTS = (
    *SECRETS.values(),
    "sk-",
    "sk_live_",
    "rk_test_",
    "ghp_",
    "gho_",
    "github_pat_",
    "xoxb-",
    "AKIA",
    "ASIA",
    "AIza",
    "hf_",
    "eyJ",
    ".eyJ",
    "-----BEGIN",
    " PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "https://",
    "://",
    "@",
    "bob:pw@",
    "Bearer ",
    "bEaReR ",
    "Authorization: Basic ",
    "password",
    "PASSWD",
    "passphrase",
    "pass",
    "secret",
    "api_key",
    "x-api-key",
    "token",
    "id_token",
    "private_key",
    " is ",
    " was ",
    "=",
    ": ",
    '"',
    "'",
    "123456789:",
    "ı",
    "İ",
    "ſ",
    "K",
    "é",
    "—",
    "\n",
    " ",
    ".",
    "-",
    "_",
    "apı_key=",
    "İd_token: ",
    "ſecret=",
    "paſſword is ",
    "toKen=",
    "bearer ",
    "abcdefghijklmnopqrstuvwxyz0123456789",
    "hunter22",
    "Bearer abcdefghijklmnopqrstu",
    "BEARER abcdefghijklmnopqrstu",
    "PaSsWoRd is hunter22",
    "passphrase is hunter22",
    "Authorization: BASIC dXNlcjpwYXNz",
)
PIECES = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.sampled_from(FRAGMENTS),
    st.text(alphabet="abcXYZ019_-.:=@/ ", min_size=1, max_size=12),
    st.text(min_size=1, max_size=4),
)
TEXTS = st.lists(PIECES, max_size=14).map("".join)


def ungated(text: str) -> str:
    """Every pattern applied, in order, with no gate: the reference the gates must match."""
    for rule in RULES:
        text = rule.substitute(text)
    return text


@settings(max_examples=600, deadline=None)
@given(TEXTS)
def test_gated_redaction_equals_every_pattern_applied(text: str) -> None:
    assert redact(text) == ungated(text)


def test_every_known_secret_passes_its_rules_gate() -> None:
    for secret in SECRETS.values():
        text = f"note {secret} end"
        assert redact(text) == ungated(text) != text

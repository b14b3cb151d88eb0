"""Masking of secrets (API keys, tokens, passwords, URL credentials) in text and tool arguments.

Pure and idempotent: every replacement is `[REDACTED]`, which no pattern matches again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

REDACTED = "[REDACTED]"

# Whole private key blocks; an unterminated block (a truncated paste) is masked to the end.
_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",
    re.DOTALL,
)
# scheme://user:password@host -> scheme://[REDACTED]@host (the host stays readable).
_URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^\s:/@\[\]]+:[^\s/@]+@")
# Bearer tokens are long; the length floor keeps prose like "bearer bonds" intact.
_BEARER = re.compile(r"(?P<lead>\bBearer\s+)[A-Za-z0-9._~+/=-]{16,}", re.IGNORECASE)
_BASIC_AUTH = re.compile(r"(?P<lead>\bAuthorization:\s*Basic\s+)[A-Za-z0-9+/=]{8,}", re.IGNORECASE)

# Key names whose value is a secret in `key=value`, `key: value` and `"key": "value"` forms.
_SECRET_KEY_NAMES = (
    r"password|passwd|passphrase|secret|client_secret|secret_key|api[_-]?key|apikey"
    r"|access[_-]?token|auth[_-]?token|refresh[_-]?token|id[_-]?token|bot[_-]?token"
    r"|private[_-]?key|session[_-]?token|x-api-key|secret[_-]?access[_-]?key|account[_-]?key"
)
SECRET_KEY = re.compile(rf"^(?:[\w-]*[_-])?(?:{_SECRET_KEY_NAMES})$", re.IGNORECASE)
_ASSIGNMENT = re.compile(
    # `query`: the key follows "?" or "&", so the value ends at the next "&" of the query string;
    # anywhere else a password may hold "&" ("Tr0ub4dor&3") and is masked to the next space.
    rf"(?P<key>(?:(?P<query>(?<=[?&]))|(?<![A-Za-z0-9]))(?:{_SECRET_KEY_NAMES})[\"']?)"
    r"(?P<sep>\s*[=:]\s*)"
    r"(?!(?:null|true|false)\b)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'"
    r"|[^\s;,\"'<>{}\[\]]+?(?=(?(query)&|(?!))|[\s;,\"'<>{}\[\]]|\Z))",
    re.IGNORECASE,
)
# "the wifi password is hunter2": group chats state secrets in prose more than in config syntax.
_PROSE_PASSWORD = re.compile(
    r"(?P<lead>\b(?:password|passwd|passphrase)\s+(?:is|was)\s+)(?P<value>[^\s\[][^\s]{3,})",
    re.IGNORECASE,
)

# Provider key formats; sources: each provider's documented key prefix.
_OPENAI = re.compile(r"\bsk-(?:ant-|proj-|svcacct-|or-)?[A-Za-z0-9_-]{20,}")  # OpenAI, Anthropic
_STRIPE = re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}")
_GITHUB = re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}")
_GITHUB_PAT = re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}")
_SLACK = re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")
_AWS = re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")  # AWS access key id
_GOOGLE = re.compile(r"\bAIza[0-9A-Za-z_-]{35}")
_TELEGRAM = re.compile(r"\b\d{6,10}:[A-Za-z0-9_-]{30,}")  # bot token
# Discord bot token: base64 user id, timestamp, HMAC.
_DISCORD = re.compile(r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")
_HUGGING_FACE = re.compile(r"\bhf_[A-Za-z0-9]{30,}")
# Gate regexes for patterns with no rare literal. Each starts with one fixed character, which
# the regex engine finds with a fast scan instead of trying the pattern at every position.
_TELEGRAM_GATE = re.compile(r":[A-Za-z0-9_-]{30}")
_DISCORD_GATE = re.compile(r"\.[A-Za-z0-9_-]{6,7}\.")

# IGNORECASE also matches these non-ASCII letters to ASCII ones (re's case equivalences:
# dotless i, dotted capital I, long s, Kelvin sign); mapping them first keeps lowered gates
# sound, and one-to-one, so lower() never changes positions.
_CASE_EQUIVALENTS = str.maketrans({"\u0131": "i", "\u0130": "i", "\u017f": "s", "\u212a": "k"})


class _Probe:
    """One text as the gates see it; its lowered form is computed at most once."""

    __slots__ = ("_lower", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._lower: str | None = None

    @property
    def lower(self) -> str:
        if self._lower is None:
            self._lower = _lowered(self.text)
        return self._lower


def _lowered(text: str) -> str:
    return (text if text.isascii() else text.translate(_CASE_EQUIVALENTS)).lower()


@dataclass(frozen=True, slots=True)
class Rule:
    """A secret pattern, its replacement, and a cheap gate that is False only where the pattern
    cannot match. The gate is data, so all gates can be checked together in one fast pass:

    * `guard`: characters of which every match contains at least one ("" for none);
    * `literals`, `folded`: substrings of which every match contains one (`folded`: in the
      lowered text, for IGNORECASE patterns);
    * `probes`: fixed-start regexes of which one finds every match.
    """

    name: str
    pattern: re.Pattern[str]
    replacement: str | Callable[[re.Match[str]], str]
    guard: str = ""
    literals: tuple[str, ...] = ()
    folded: tuple[str, ...] = ()
    probes: tuple[re.Pattern[str], ...] = ()

    def substitute(self, text: str) -> str:
        return self.pattern.sub(self.replacement, text)

    def may_match(self, probe: _Probe) -> bool:
        text = probe.text
        if self.guard and not any(char in text for char in self.guard):
            return False
        return (
            any(literal in text for literal in self.literals)
            or any(word in probe.lower for word in self.folded)
            or any(regex.search(text) is not None for regex in self.probes)
        )


def _lead(match: re.Match[str]) -> str:
    return f"{match['lead']}{REDACTED}"


# AWS secret access key: 40 base64 characters, recognised only on a line that names AWS or
# carries an access key id (a bare 40-character word is too common to mask). Before the token
# rules, which would mask the AKIA marker first.
_AWS_SECRET = re.compile(
    r"(?:aws|AWS|Aws|AKIA|ASIA)[^\n]{0,80}?(?<![A-Za-z0-9/+])"
    # Mixed case, so a lower-case hex commit id on the same line is left alone.
    r"(?P<value>(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])[A-Za-z0-9/+]{40})"
    r"(?![A-Za-z0-9/+=])"
)
# A bare AWS secret access key: 40 base64 characters holding both cases and a digit, so a
# lower-case hex commit id or a long word is left alone.
_AWS_BARE_SECRET = re.compile(
    r"(?<![\w/+=.-])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
    r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![\w/+=-]|\.\w)"
)
_FORTY_BASE64 = re.compile(r"[A-Za-z0-9/+]{40}")
_GITLAB = re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")
_NPM = re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")
_SENDGRID = re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")
_PYPI = re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}")
_GOOGLE_OAUTH = re.compile(r"\bya29\.[A-Za-z0-9_-]{20,}")
_DIGITALOCEAN = re.compile(r"\bdo[op]_v1_[a-f0-9]{64}\b")
_TWILIO = re.compile(r"\bSK[0-9a-f]{32}\b")


def _mask_gated(match: re.Match[str]) -> str:
    if "value" not in match.groupdict():
        return REDACTED
    start, end = match.span("value")
    whole = match.group(0)
    offset = match.start()
    return whole[: start - offset] + REDACTED + whole[end - offset :]


def _mask_assignment(match: re.Match[str]) -> str:
    value = match["value"]
    quote = value[0] if value[0] in "\"'" else ""
    return f"{match['key']}{match['sep']}{quote}{REDACTED}{quote}"


_PASSWORD_WORDS = ("passw", "passphrase")  # password, passwd, passphrase

# Applied in this order; each gate sees the text as the rules before it left it.
RULES: tuple[Rule, ...] = (
    Rule("private_key", _PRIVATE_KEY, REDACTED, guard="-", literals=("-----BEGIN",)),
    Rule(
        "url_credentials",
        _URL_CREDENTIALS,
        lambda m: f"{m['scheme']}{REDACTED}@",
        guard="@",
        literals=("://",),
    ),
    Rule("bearer", _BEARER, _lead, folded=("bearer",)),
    Rule("basic_auth", _BASIC_AUTH, _lead, guard=":", folded=("authorization:",)),
    Rule(
        "assignment",
        _ASSIGNMENT,
        _mask_assignment,
        guard="=:",
        folded=(*_PASSWORD_WORDS, "secret", "api", "token", "private", "account"),
    ),
    Rule("prose_password", _PROSE_PASSWORD, _lead, folded=_PASSWORD_WORDS),
    Rule("aws_secret", _AWS_SECRET, _mask_gated, literals=("AKIA", "ASIA", "aws", "AWS", "Aws")),
    Rule("gitlab", _GITLAB, REDACTED, guard="-", literals=("glpat-",)),
    Rule("npm", _NPM, REDACTED, guard="_", literals=("npm_",)),
    Rule("sendgrid", _SENDGRID, REDACTED, guard=".", literals=("SG.",)),
    Rule("pypi", _PYPI, REDACTED, guard="-", literals=("pypi-",)),
    Rule("google_oauth", _GOOGLE_OAUTH, REDACTED, guard=".", literals=("ya29.",)),
    Rule("digitalocean", _DIGITALOCEAN, REDACTED, guard="_", literals=("dop_v1_", "doo_v1_")),
    Rule("twilio", _TWILIO, REDACTED, literals=("SK",)),
    Rule("openai", _OPENAI, REDACTED, guard="-", literals=("sk-",)),
    Rule("stripe", _STRIPE, REDACTED, guard="_", literals=("_live_", "_test_")),
    Rule("github", _GITHUB, REDACTED, guard="_", probes=(re.compile(r"gh[pousr]_"),)),
    Rule("github_pat", _GITHUB_PAT, REDACTED, guard="_", literals=("github_pat_",)),
    Rule("slack", _SLACK, REDACTED, guard="-", literals=("xox",)),
    Rule("aws", _AWS, REDACTED, probes=(re.compile(r"A(?:KIA|SIA)"),)),
    Rule("google", _GOOGLE, REDACTED, literals=("AIza",)),
    Rule("telegram", _TELEGRAM, REDACTED, guard=":", probes=(_TELEGRAM_GATE,)),
    Rule("discord", _DISCORD, REDACTED, guard=".", probes=(_DISCORD_GATE,)),
    Rule("jwt", _JWT, REDACTED, guard=".", literals=(".eyJ",)),
    Rule("hugging_face", _HUGGING_FACE, REDACTED, guard="_", literals=("hf_",)),
    # Last: a provider's own rule names its key better than this shape does.
    Rule("aws_bare_secret", _AWS_BARE_SECRET, REDACTED, probes=(_FORTY_BASE64,)),
)


def may_hold_secret(text: str, lowered: str | None = None) -> bool:
    """False when no rule's gate passes: redact() returns the text as it is."""
    probe = _Probe(text)
    if lowered is not None:
        probe._lower = lowered
    return any(rule.may_match(probe) for rule in RULES)


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by [REDACTED]."""
    if not text or not may_hold_secret(text):
        return text
    return _substituted(text)


def _substituted(text: str) -> str:
    probe = _Probe(text)
    for rule in RULES:
        if rule.may_match(probe):
            changed = rule.substitute(probe.text)
            if changed != probe.text:
                probe = _Probe(changed)
    return probe.text


def redact_value(obj: Any) -> Any:
    """A redacted copy of a JSON-like value; JSON strings (tool arguments) stay valid JSON."""
    if isinstance(obj, str):
        return _redact_string(obj)
    if isinstance(obj, Mapping):
        return {
            key: REDACTED
            if isinstance(key, str) and SECRET_KEY.match(key) and isinstance(value, str) and value
            else redact_value(value)
            for key, value in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [redact_value(item) for item in obj]
    return obj


def _redact_string(text: str) -> str:
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        try:
            parsed = json.loads(text)
        except ValueError:
            return redact(text)
        cleaned = redact_value(parsed)
        # Leave untouched JSON byte-identical so provider prompt caches keep matching.
        return text if cleaned == parsed else json.dumps(cleaned, ensure_ascii=False)
    return redact(text)

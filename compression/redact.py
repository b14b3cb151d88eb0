"""Masking of secrets (API keys, tokens, passwords, URL credentials) in text and tool arguments.

Pure and idempotent: every replacement is `[REDACTED]`, which no pattern matches again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
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
    rf"(?P<key>(?<![A-Za-z0-9])(?:{_SECRET_KEY_NAMES})[\"']?)(?P<sep>\s*[=:]\s*)"
    r"(?!(?:null|true|false)\b)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s&;,\"'<>{}\[\]]+)",
    re.IGNORECASE,
)
# "the wifi password is hunter2": group chats state secrets in prose more than in config syntax.
_PROSE_PASSWORD = re.compile(
    r"(?P<lead>\b(?:password|passwd|passphrase)\s+(?:is|was)\s+)(?P<value>[^\s\[][^\s]{3,})",
    re.IGNORECASE,
)

# Provider key formats; sources: each provider's documented key prefix.
_TOKEN_PATTERNS = (
    re.compile(r"\bsk-(?:ant-|proj-|svcacct-|or-)?[A-Za-z0-9_-]{20,}"),  # OpenAI, Anthropic
    re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"),  # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),  # AWS access key id
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}"),  # Google API key
    re.compile(r"\b\d{6,10}:[A-Za-z0-9_-]{30,}"),  # Telegram bot token
    # Discord bot token: base64 user id, timestamp, HMAC.
    re.compile(r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6,7}\.[A-Za-z0-9_-]{27,}"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),  # JWT
    re.compile(r"\bhf_[A-Za-z0-9]{30,}"),  # Hugging Face
)

# Shapes that are only tried when a literal they need is in the text: the substring test is far
# cheaper than the regex, and ordinary chat text carries none of these literals.
_GATED_PATTERNS: tuple[tuple[tuple[str, ...], re.Pattern[str]], ...] = (
    # AWS secret access key: 40 base64 characters, recognised only on a line that names AWS or
    # carries an access key id (a bare 40-character word is too common to mask). Before the
    # token patterns, which would mask the AKIA marker first.
    (
        ("AKIA", "ASIA", "aws", "AWS", "Aws"),
        re.compile(
            r"(?:aws|AWS|Aws|AKIA|ASIA)[^\n]{0,80}?(?<![A-Za-z0-9/+])"
            # Mixed case, so a lower-case hex commit id on the same line is left alone.
            r"(?P<value>(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[a-z])[A-Za-z0-9/+]{40})"
            r"(?![A-Za-z0-9/+=])"
        ),
    ),
    (("glpat-",), re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}")),  # GitLab
    (("npm_",), re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),  # npm
    (("SG.",), re.compile(r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}")),  # SendGrid
    (("pypi-",), re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}")),  # PyPI upload token
    (("ya29.",), re.compile(r"\bya29\.[A-Za-z0-9_-]{20,}")),  # Google OAuth access token
    (("dop_v1_", "doo_v1_"), re.compile(r"\bdo[op]_v1_[a-f0-9]{64}\b")),  # DigitalOcean
    (("SK",), re.compile(r"\bSK[0-9a-f]{32}\b")),  # Twilio API key
)


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


def redact(text: str) -> str:
    """`text` with every recognised secret replaced by [REDACTED]."""
    if not text:
        return text
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m['scheme']}{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m['lead']}{REDACTED}", text)
    text = _BASIC_AUTH.sub(lambda m: f"{m['lead']}{REDACTED}", text)
    text = _ASSIGNMENT.sub(_mask_assignment, text)
    text = _PROSE_PASSWORD.sub(lambda m: f"{m['lead']}{REDACTED}", text)
    for literals, gated in _GATED_PATTERNS:
        if any(literal in text for literal in literals):
            text = gated.sub(_mask_gated, text)
    for pattern in _TOKEN_PATTERNS:
        text = pattern.sub(REDACTED, text)
    return text


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

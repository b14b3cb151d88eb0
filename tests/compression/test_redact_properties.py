"""Each secret rule masks every value of its shape, wherever it stands in a message."""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from compactbot.compression.redact import REDACTED, redact

ALNUM = string.ascii_letters + string.digits
BASE64 = ALNUM + "/+"


def _body(alphabet: str, size: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=alphabet, min_size=size, max_size=size)


# Each rule's secret as (prefix, random body): the body is what must never survive.
SHAPES: dict[str, st.SearchStrategy[tuple[str, str]]] = {
    "openai": st.tuples(st.just("sk-proj-"), _body(ALNUM, 32)),
    "stripe": st.tuples(st.just("sk_live_"), _body(ALNUM, 24)),
    "github": st.tuples(st.just("ghp_"), _body(ALNUM, 36)),
    "github_pat": st.tuples(st.just("github_pat_"), _body(ALNUM, 40)),
    "slack": st.tuples(st.just("xoxb-"), _body(ALNUM, 24)),
    "aws_access_key_id": st.tuples(st.just("AKIA"), _body(string.ascii_uppercase, 16)),
    "google": st.tuples(st.just("AIza"), _body(ALNUM, 35)),
    "hugging_face": st.tuples(st.just("hf_"), _body(ALNUM, 34)),
    "gitlab": st.tuples(st.just("glpat-"), _body(ALNUM, 20)),
    "npm": st.tuples(st.just("npm_"), _body(ALNUM, 36)),
    "pypi": st.tuples(st.just("pypi-"), _body(ALNUM, 60)),
    # A bare AWS secret access key: nothing names it, only its shape does.
    "aws_bare_secret": st.tuples(
        st.just(""),
        _body(BASE64, 37)
        .map(lambda body: "Aa1" + body)
        .flatmap(lambda body: st.permutations(body).map("".join)),
    ),
}
PROSE = st.sampled_from(("", "here it is: ", "use ", "(", "new key → ", "密钥 "))
AFTER = st.sampled_from(("", " thanks", ".", ")", " 谢谢", "\nbye"))


def _fragments(body: str) -> list[str]:
    return [body[i : i + 12] for i in range(0, len(body) - 11, 6)]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(SHAPES)).flatmap(lambda kind: SHAPES[kind]), PROSE, AFTER)
def test_every_rule_masks_its_whole_secret(
    secret: tuple[str, str], before: str, after: str
) -> None:
    prefix, body = secret
    masked = redact(f"{before}{prefix}{body}{after}")
    assert REDACTED in masked
    assert not any(fragment in masked for fragment in _fragments(body))
    assert redact(masked) == masked


PASSWORD = st.text(alphabet=ALNUM + "!#$%&()*+-./:=?@^_`|~", min_size=6, max_size=24).filter(
    lambda value: any(c.isalnum() for c in value)
)


@settings(max_examples=200, deadline=None)
@given(
    PASSWORD,
    st.sampled_from(("password: ", "password=", "PASSWD = ", "the wifi password is ")),
    AFTER,
)
def test_a_stated_password_is_masked_whole(password: str, lead: str, after: str) -> None:
    masked = redact(f"{lead}{password}{after}")
    assert masked.startswith(lead.rstrip())
    # No run of the password longer than two characters survives ("&3" of "Tr0ub4dor&3" did).
    rest = masked[len(lead) :].replace(REDACTED, " ")  # "000ACT" is not in "[REDACTED]"
    assert not any(password[i : i + 3] in rest for i in range(len(password) - 2)), masked

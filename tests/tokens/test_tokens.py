from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from compactbot.compression.tokens import IMAGE_TOKENS, TokenCounter, counter_for

SAMPLES = {
    "english": "The deploy is scheduled for Friday at 14:00 UTC; Bob owns the rollback plan.",
    "code": "def f(x: int) -> int:\n    return {'a': [1, 2, 3]}[x] if x else -1\n",
    "chinese": "我们明天部署新版本，请大家提前测试。",
    "emoji": "ship it 🚀🔥 👨‍👩‍👧‍👦 🇩🇪",
}


def test_counts_equal_tiktoken_with_network_blocked(tmp_path: object) -> None:
    """Run in a fresh interpreter whose sockets cannot connect, with an empty tiktoken cache."""
    script = textwrap.dedent(
        f"""
        import socket, json
        def refuse(*a, **k):
            raise OSError("network disabled in test")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        from compactbot.compression.tokens import counter_for
        import tiktoken
        c = counter_for("gpt-4o")
        assert c.exact
        enc = tiktoken.get_encoding("o200k_base")
        samples = {SAMPLES!r}
        out = {{k: (c.count_text(v), len(enc.encode_ordinary(v))) for k, v in samples.items()}}
        print(json.dumps(out))
        """
    )
    env = {"TIKTOKEN_CACHE_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    import json

    for name, (ours, theirs) in json.loads(proc.stdout).items():
        assert ours == theirs > 0, name


def test_endoftext_in_user_text_counts_without_error() -> None:
    counter = counter_for("gpt-4o")
    assert counter.count_text("before <|endoftext|> after") > 3


def test_model_name_selects_encoding() -> None:
    assert counter_for("gpt-4").count_text("hello world") == 2
    assert counter_for("some-unknown-model").exact


def test_image_parts_count_fixed_amount() -> None:
    counter = TokenCounter("gpt-4o")
    msg = {
        "role": "user",
        "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 50_000}},
        ],
    }
    assert (
        counter.count_message(msg)
        == counter.count_message({"role": "user", "content": "look"}) + IMAGE_TOKENS
    )


def test_tool_call_envelope_counts() -> None:
    counter = counter_for("gpt-4o")
    bare = {"role": "assistant", "content": None}
    with_call = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search_history", "arguments": '{"query": "deploy"}'},
            }
        ],
    }
    assert counter.count_message(with_call) > counter.count_message(bare) + 10


def test_rough_fallback_when_no_encoding(monkeypatch: pytest.MonkeyPatch) -> None:
    from compactbot.compression import tokens

    tokens.encoding_for.cache_clear()
    monkeypatch.setattr(tokens, "seed_tiktoken_cache", lambda: (_ for _ in ()).throw(OSError()))
    try:
        rough = tokens.TokenCounter("rough-model")
        assert not rough.exact
        assert rough.count_text("a" * 40) == 10
    finally:
        tokens.encoding_for.cache_clear()

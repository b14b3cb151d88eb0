"""The one-pass summarizer chunks and the stored hints change nothing compress() returns."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from compactbot.compression import CompressorConfig, ContextCompressor
from compactbot.compression.message_hints import HintsError, message_hints
from compactbot.compression.redact import redact
from compactbot.compression.summarizer import SummaryRequest
from compactbot.compression.summary_chunks import summary_chunks
from compactbot.compression.summary_input import chunk_turns, participants, summary_turns
from compactbot.compression.tokens import TokenCounter
from tests.compression.seeded_chats import seeded_chat

SEEDS = (1, 2, 3, 4, 5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("max_chars", (4_000, 20_000, 10**9))
def test_chunks_equal_the_plain_steps(seed: int, max_chars: int) -> None:
    turns = seeded_chat(seed)
    expected = chunk_turns(summary_turns(turns), max_chars)
    for hints in (None, [message_hints(m) for m in turns]):
        chunks = summary_chunks(turns, max_chars, hints)
        assert [c.turns for c in chunks] == expected
        assert [list(c.participants) for c in chunks] == [participants(t) for t in expected]
        assert [c.end - c.start for c in chunks] == [len(t) for t in expected]


class _Recording:
    """Answers with a summary quoting the first turn, and keeps every request it was sent."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    async def summarize(self, request: SummaryRequest) -> str:
        self.requests.append(request)
        first = str(request.turns[0].get("content"))[:60]
        return f"## Key facts and exact values\n- FACT: {first} costs $5\n- the deploy is Friday"


def _compress(messages: list[dict[str, Any]], summarizer: Any, **given: Any) -> Any:
    config = CompressorConfig(context_length=8_192, protect_first_n=2, protect_last_n=4)
    compressor = ContextCompressor(config, summarizer, clock=lambda: 1_800_000_000.0)
    return asyncio.run(compressor.compress(messages, force=True, **given))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("summarised", (True, False))
def test_compress_with_hints_equals_compress_without(seed: int, summarised: bool) -> None:
    messages = seeded_chat(seed)
    counter = TokenCounter(None, cache_entries=0)
    counts = [counter.count_message(m) for m in messages]
    plain, fast = (_Recording(), _Recording()) if summarised else (None, None)
    reference = _compress(messages, plain, token_counts=counts)
    hints = [message_hints(m) for m in messages]
    hinted = _compress(messages, fast, token_counts=counts, hints=hints)
    assert reference.outcome == hinted.outcome == "compressed"
    assert hinted.messages == reference.messages
    assert hinted.memory == reference.memory
    assert hinted.tokens_before == reference.tokens_before
    assert hinted.tokens_after == reference.tokens_after
    if plain is not None and fast is not None:
        assert [r.turns for r in fast.requests] == [r.turns for r in plain.requests]
        assert [r.participants for r in fast.requests] == [r.participants for r in plain.requests]


def test_hints_that_do_not_fit_the_messages_are_refused() -> None:
    messages = seeded_chat(1, turns=10)
    with pytest.raises(HintsError):
        _compress(messages, None, hints=[0])


@pytest.mark.parametrize("seed", SEEDS)
def test_a_transcript_holding_a_summary_compresses_alike_with_hints(seed: int) -> None:
    first = _compress(seeded_chat(seed), _Recording())
    messages = [*first.messages, *seeded_chat(seed + 100)[1:]]
    hints = [message_hints(m) for m in messages]
    plain, fast = _Recording(), _Recording()
    reference = _compress(messages, plain)
    hinted = _compress(messages, fast, hints=hints)
    assert hinted.messages == reference.messages
    assert hinted.memory == reference.memory
    assert [r.turns for r in fast.requests] == [r.turns for r in plain.requests]


def test_hints_vouch_only_for_what_holds() -> None:
    from compactbot.compression.message_hints import (
        CALLS_CLEAN,
        FEATURELESS,
        PLAIN,
        RULES_VERSION,
        SHOWN_AS_IS,
        SHOWN_FEATURELESS,
        SHOWN_LIGHT,
        SUMMARY_CLEAN,
        TOOL_MESSAGE,
        VERSION_SHIFT,
    )
    from compactbot.compression.summary_input import BODY_LIMIT_CHARS
    from tests.compression.test_redact import SECRETS

    chatter = message_hints({"role": "user", "content": "[Alice] see you"})
    assert chatter == (
        SUMMARY_CLEAN
        | PLAIN
        | FEATURELESS
        | SHOWN_FEATURELESS
        | CALLS_CLEAN
        | SHOWN_AS_IS
        | SHOWN_LIGHT
        | RULES_VERSION << VERSION_SHIFT
    )
    secret = message_hints({"role": "user", "content": f"[Bob] key {SECRETS['openai']}"})
    assert not secret & SUMMARY_CLEAN and not secret & SHOWN_AS_IS
    # The summarizer's copy differs from each of these: they are copied, not shown as they are.
    changes: list[dict[str, Any]] = [
        {"role": "user", "content": " [Alice] padded "},
        {"role": "assistant", "content": "<think>plan</think>The answer."},
        {"role": "assistant", "content": "x" * (BODY_LIMIT_CHARS + 1)},
        {"role": "user", "content": [{"type": "text", "text": "parts"}]},
        {"role": "assistant", "content": "calling", "tool_calls": []},
    ]
    for changed in changes:
        assert not message_hints(changed) & SHOWN_AS_IS, changed
    # Without hints the view tests the same: a chat line shown as it is goes in uncopied.
    from compactbot.compression.message_hints import view_hint
    from compactbot.compression.summary_chunks import summary_view

    plain = {"role": "user", "content": "[Alice] see you"}
    reply = {"role": "assistant", "content": "Noted, see you then."}
    view = summary_view([plain, reply])
    assert view.turns[0] is plain and view.turns[1] is reply
    for message in [{"role": "user", "content": f"[Bob] key {SECRETS['openai']}"}, *changes]:
        assert view_hint(message) is None, message
        assert summary_view([message]).turns[0] is not message
    value = message_hints({"role": "user", "content": "[Ana] The budget is $5,000."})
    assert not value & FEATURELESS and not value & SHOWN_FEATURELESS and not value & SHOWN_LIGHT
    # A question has features, yet nothing the backup of exact values keeps.
    question = message_hints({"role": "user", "content": "[Bob] where do we meet?"})
    assert not question & SHOWN_FEATURELESS and question & SHOWN_LIGHT
    call = {
        "id": "c1",
        "function": {"name": "f", "arguments": f'{{"token": "{SECRETS["openai"]}"}}'},
    }
    caller = message_hints({"role": "assistant", "content": None, "tool_calls": [call]})
    assert caller & TOOL_MESSAGE and not caller & CALLS_CLEAN


@pytest.mark.parametrize("seed", SEEDS)
def test_the_shown_copy_is_read_once_only_when_it_is_the_text(seed: int) -> None:
    from compactbot.compression.extract import read_features
    from compactbot.compression.message_hints import SHOWN_FEATURELESS
    from compactbot.compression.summary_input import truncate_body
    from compactbot.compression.transcript import content_text, strip_think

    padded = {"role": "assistant", "content": "  The budget is $5,000.  "}
    for message in [*seeded_chat(seed), padded]:
        if message["role"] not in ("user", "assistant"):
            continue
        text = content_text(message.get("content"))
        view = strip_think(text) if message["role"] == "assistant" else text
        shown = {**message, "content": truncate_body(redact(view))}
        features = read_features(shown)
        featureless = not (features.candidates or features.links or features.questions)
        assert bool(message_hints(message) & SHOWN_FEATURELESS) == featureless


@pytest.mark.parametrize("seed", SEEDS)
def test_the_view_finds_out_no_more_than_stored_hints_vouch_for(seed: int) -> None:
    from compactbot.compression.message_hints import SHOWN_AS_IS, SHOWN_LIGHT, view_hint

    found = 0
    for message in seeded_chat(seed):
        hint, stored = view_hint(message), message_hints(message)
        if hint is not None:
            assert hint & ~stored == 0, message
            assert hint & SHOWN_LIGHT == stored & SHOWN_LIGHT, message
            found += 1
        else:
            assert not stored & SHOWN_AS_IS or "<" in str(message.get("content")), message
    assert found > 0


def test_a_turn_bigger_than_a_chunk_keeps_its_speaker() -> None:
    huge = {"role": "user", "content": "[Mallory] " + "the plan is long and winding. " * 2_000}
    turns = [{"role": "user", "content": "[Ann] hello"}, huge]

    [_, last] = summary_chunks(turns, max_chars=4_000)

    [shrunk] = last.turns
    assert last.participants == ("Mallory",)
    assert str(shrunk["content"]).startswith("[Mallory] ")
    assert len(str(shrunk["content"])) < 4_000

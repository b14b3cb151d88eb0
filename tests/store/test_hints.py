"""Per-message compression hints: computed at store time, kept by edits, passed to compress()."""

from __future__ import annotations

from typing import Any

from compactbot.bot.compaction.session_compactor import SessionCompactor
from compactbot.bot.store import NewMessage
from compactbot.bot.store.backends import Store
from compactbot.bot.store.base import IngestItem
from compactbot.compression import CompressorConfig
from compactbot.compression.message_hints import (
    FEATURELESS,
    RULES_VERSION,
    VERSION_SHIFT,
    message_hints,
)
from compactbot.compression.tokens import counter_for
from tests.store.conftest import ManualClock

COUNTER = counter_for(None)
CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"q": 1}'}}
SECRET = "[alice] my key is sk-" + "a1B2" * 12
WIRE: list[dict[str, Any]] = [
    {"role": "user", "content": "[alice] shall we ship on Friday? https://ci.example.com/42"},
    {"role": "user", "content": SECRET},
    {"role": "user", "content": [{"type": "text", "text": "[bo] what is this picture?"}]},
    {"role": "assistant", "content": "thinking", "tool_calls": [CALL]},
    {"role": "tool", "content": "ok", "tool_call_id": "c1", "name": "f"},
    # Read back without its empty tool_calls list: the hints must be those of that form.
    {"role": "assistant", "content": "done", "tool_calls": []},
    {"role": "user", "content": "[CONTEXT COMPACTION] an earlier summary"},
]


def _row(message: dict[str, Any], **extra: Any) -> NewMessage:
    return NewMessage.from_openai(message, COUNTER.count_message(message), **extra)


async def test_stored_hints_are_those_of_the_form_read_back(store: Store) -> None:
    session = await store.active_session("console:room")
    await store.append_messages(session.id, [_row(m) for m in WIRE])
    [result] = await store.ingest(
        [IngestItem("console", "u1", "console:room", None, _row(WIRE[0]), upsert_chat=False)]
    )
    assert result.message_id is not None

    stored = await store.load_active(session.id)

    assert len(stored) == len(WIRE) + 1
    assert [m.hints for m in stored] == [message_hints(m.to_openai()) for m in stored]
    assert stored[5].hints != message_hints(WIRE[5])
    assert len({m.hints for m in stored}) >= 4


async def test_edits_and_media_rewrites_store_the_new_hints(store: Store) -> None:
    session = await store.active_session("console:room")
    plain = {"role": "user", "content": "[alice] hello"}
    [mid] = await store.append_messages(session.id, [_row(plain, platform_message_id="7")])
    edited = {"role": "user", "content": SECRET}

    assert await store.edit_platform_message("console:room", "7", SECRET, 30, message_hints(edited))
    [after_edit] = await store.load_active(session.id)
    await store.set_message_content(mid, "[alice] hello again", 6)  # no hints: unknown
    [after_rewrite] = await store.load_active(session.id)

    assert after_edit.hints == message_hints(edited) != message_hints(plain)
    assert after_rewrite.hints is None


async def _compacted(
    store: Store,
    clock: ManualClock,
    *,
    forged: bool = False,
    unknown: bool = False,
    **extra: Any,
) -> list[tuple[Any, ...]]:
    session = await store.active_session("console:room")
    wire = [
        {"role": "user", "content": f"[alice] can we ship build {i}? https://ci.example.com/{i}"}
        for i in range(30)
    ]
    rows = [_row(m, **extra) for m in wire]
    ids = await store.append_messages(session.id, rows)
    if unknown:  # as rows stored before migration 11 read back: no hints
        for message_id, row in zip(ids, rows, strict=True):
            await store.set_message_content(message_id, row.content, row.tokens)
        assert {m.hints for m in await store.load_active(session.id)} == {None}
    compactor = SessionCompactor(store, COUNTER, lambda _usage: None, clock=clock)
    report = await compactor.compact(
        session.id,
        trigger="manual",
        settings=CompressorConfig(context_length=100_000, protect_last_n=5),
        system_prompt="s",
        force=True,
    )
    assert report.changed, report
    active = await store.load_active(session.id)
    # The compressor's rows get theirs computed; carried rows keep theirs, or get them now.
    if not forged:
        assert [m.hints for m in active] == [message_hints(m.to_openai()) for m in active]
    return [(m.role, m.content, m.kind, m.tokens) for m in active]


async def test_compaction_passes_the_stored_hints(
    open_fresh_store: Any, clock: ManualClock
) -> None:
    async with open_fresh_store() as stored:
        with_hints = await _compacted(stored, clock)
    async with open_fresh_store() as unknown:
        without = await _compacted(unknown, clock, unknown=True)
    # A false FEATURELESS of the current rules is believed: proof that compress() was given
    # the stored hints; the same claim from an older version of the rules is not.
    forged_hints = 63 | FEATURELESS | RULES_VERSION << VERSION_SHIFT
    async with open_fresh_store() as forged:
        believed = await _compacted(forged, clock, forged=True, hints=forged_hints)
    async with open_fresh_store() as stale:
        doubted = await _compacted(stale, clock, forged=True, hints=63 | FEATURELESS)

    assert with_hints == without == doubted
    assert believed != with_hints

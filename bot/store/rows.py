"""Translation between store records and database rows (JSON columns, booleans, NULL user ids),
shared by both backends: records are read back the same way; SQLite writes these parameters,
PostgreSQL its own (`postgres/rows.py`) where its types differ."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from compactbot.bot.store.base import (
    ChatRecord,
    CompressionEvent,
    NewMessage,
    Pin,
    SearchHit,
    SessionRecord,
    StoredMessage,
    UsagePurpose,
    UsageRow,
)
from compactbot.compression.state import CompressorState

Row = Mapping[str, Any]

# Session columns holding CompressorState, named like its fields.
STATE_COLUMNS: tuple[str, ...] = (
    "compression_count",
    "previous_summary",
    "strikes",
    "pause_until",
    "pause_level",
    "cooldown_until",
    "cooldown_cause",
    "failure_streak",
    "last_prompt_tokens",
    "verdict_pending",
    "memory_need_tokens",
)

MESSAGE_COLUMNS = (
    "session_id, seq, role, author_id, author_name, content, content_format, tool_calls,"
    " tool_call_id, name, platform_message_id, tokens, created_at, active, compacted, kind, hints,"
    " author_admin"
)
# New rows are always active and not compacted: seq and created_at come from the caller.
INSERT_MESSAGE_SQL = (
    f"INSERT INTO messages ({MESSAGE_COLUMNS})"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 0, ?, ?, ?)"
)


def encode_content(content: Any) -> tuple[str | None, str]:
    """(stored text, format): str is kept verbatim so it round-trips byte for byte."""
    if content is None:
        return None, "null"
    if isinstance(content, str):
        return content, "text"
    return json.dumps(content, ensure_ascii=False), "json"


def decode_content(text: str | None, content_format: str) -> Any:
    if content_format == "json" and text is not None:
        return json.loads(text)
    if content_format == "null":
        return None
    return text


def message_params(message: NewMessage, session_id: int, seq: int, now: float) -> tuple[Any, ...]:
    content, content_format = encode_content(message.content)
    tool_calls = json.dumps(message.tool_calls, ensure_ascii=False) if message.tool_calls else None
    return (
        session_id,
        seq,
        message.role,
        message.author_id,
        message.author_name,
        content,
        content_format,
        tool_calls,
        message.tool_call_id,
        message.name,
        message.platform_message_id,
        message.tokens,
        message.created_at if message.created_at is not None else now,
        message.kind,
        message.stored_hints(),
        message.author_admin,
    )


def message_from_row(row: Row) -> StoredMessage:
    tool_calls = row["tool_calls"]
    return StoredMessage(
        id=row["id"],
        session_id=row["session_id"],
        role=row["role"],
        content=decode_content(row["content"], row["content_format"]),
        tokens=row["tokens"],
        created_at=row["created_at"],
        active=bool(row["active"]),
        compacted=bool(row["compacted"]),
        kind=row["kind"],
        author_id=row["author_id"],
        author_name=row["author_name"],
        author_admin=None if row["author_admin"] is None else bool(row["author_admin"]),
        tool_calls=json.loads(tool_calls) if tool_calls is not None else None,
        tool_call_id=row["tool_call_id"],
        name=row["name"],
        platform_message_id=row["platform_message_id"],
        hints=row["hints"],
    )


def hit_from_row(row: Row) -> SearchHit:
    # Stored JSON text is already what StoredMessage.text would show for list content.
    return SearchHit(
        message_id=row["id"],
        session_id=row["session_id"],
        role=row["role"],
        author_name=row["author_name"],
        text=row["content"] or "",
        created_at=row["created_at"],
        active=bool(row["active"]),
    )


def chat_from_row(row: Row) -> ChatRecord:
    return ChatRecord(
        key=row["key"],
        platform=row["platform"],
        title=row["title"],
        parent_key=row["parent_key"],
        is_group=bool(row["is_group"]),
        created_at=row["created_at"],
    )


def session_from_row(row: Row) -> SessionRecord:
    state = CompressorState(
        compression_count=row["compression_count"],
        previous_summary=row["previous_summary"],
        strikes=row["strikes"],
        pause_until=row["pause_until"],
        pause_level=row["pause_level"],
        cooldown_until=row["cooldown_until"],
        cooldown_cause=row["cooldown_cause"],
        failure_streak=row["failure_streak"],
        last_prompt_tokens=row["last_prompt_tokens"],
        verdict_pending=bool(row["verdict_pending"]),
        memory_need_tokens=row["memory_need_tokens"],
    )
    return SessionRecord(
        id=row["id"],
        chat_key=row["chat_key"],
        scope_user=row["scope_user"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        active_tokens=row["active_tokens"],
        active_messages=row["active_messages"],
        version=row["version"],
        last_activity_at=row["last_activity_at"],
        system_prompt=row["system_prompt"],
        compressor=state,
    )


def state_params(state: CompressorState) -> tuple[Any, ...]:
    return tuple(
        int(value) if isinstance(value, bool) else value
        for value in (getattr(state, column) for column in STATE_COLUMNS)
    )


def event_from_row(row: Row) -> CompressionEvent:
    return CompressionEvent(
        id=row["id"],
        chat_key=row["chat_key"],
        session_id=row["session_id"],
        trigger=row["trigger"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        outcome=row["outcome"],
        messages_before=row["messages_before"],
        messages_after=row["messages_after"],
        tokens_before=row["tokens_before"],
        tokens_after=row["tokens_after"],
        summary_tokens=row["summary_tokens"],
        error=row["error"],
        summary_calls=row["summary_calls"],
        summary_cost_tokens=row["summary_cost_tokens"],
    )


def pin_from_row(row: Row) -> Pin:
    return Pin(
        id=row["id"],
        chat_key=row["chat_key"],
        text=row["text"],
        author=row["author"],
        created_at=row["created_at"],
    )


def usage_from_row(row: Row) -> UsageRow:
    return UsageRow(
        chat_key=row["chat_key"],
        user_id=row["user_id"] or None,
        day=row["day"],
        purpose=cast(UsagePurpose, row["purpose"]),
        prompt_tokens=row["prompt_tokens"],
        completion_tokens=row["completion_tokens"],
        calls=row["calls"],
    )


def event_params(event: CompressionEvent) -> tuple[Any, ...]:
    return (
        event.chat_key,
        event.session_id,
        event.trigger,
        event.started_at,
        event.ended_at,
        event.outcome,
        event.messages_before,
        event.messages_after,
        event.tokens_before,
        event.tokens_after,
        event.summary_tokens,
        event.error,
        event.summary_calls,
        event.summary_cost_tokens,
    )

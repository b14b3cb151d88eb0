"""PostgreSQL row parameters: native booleans, `$n` placeholders and the searchable text column.

Reading rows back goes through `bot.store.rows`, whose functions index rows by column name, which
asyncpg records support as SQLite rows do.
"""

from __future__ import annotations

import json
from typing import Any

from compactbot.bot.store import rows
from compactbot.bot.store.base import NewMessage
from compactbot.compression.state import CompressorState

# rows.MESSAGE_COLUMNS, then what only this backend has.
MESSAGE_COLUMNS = rows.MESSAGE_COLUMNS + ", search_text"
_BEFORE, _AFTER = (", ".join(f"${n}" for n in numbers) for numbers in (range(1, 14), range(14, 18)))
# New rows are always active and not compacted: seq and created_at come from the caller.
INSERT_MESSAGE_SQL = (
    f"INSERT INTO messages ({MESSAGE_COLUMNS}) VALUES ({_BEFORE}, TRUE, FALSE, {_AFTER})"
)


def search_text(message: NewMessage) -> str:
    """What substring search looks in: the text parts of the content, then the tool calls."""
    calls = json.dumps(message.tool_calls, ensure_ascii=False) if message.tool_calls else None
    return search_text_of(message.content, calls)


def search_text_of(content: Any, tool_calls_json: str | None) -> str:
    """`search_text` of stored columns: decoded content and the tool calls' JSON text."""
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = " ".join(
            str(part["text"])
            for part in content
            if isinstance(part, dict) and part.get("text") is not None
        )
    else:
        text = ""
    return f"{text} {tool_calls_json or ''}"


def message_params(message: NewMessage, session_id: int, seq: int, now: float) -> tuple[Any, ...]:
    return (*rows.message_params(message, session_id, seq, now), search_text(message))


def state_params(state: CompressorState) -> tuple[Any, ...]:
    """CompressorState in rows.STATE_COLUMNS order; booleans stay booleans here."""
    return tuple(getattr(state, column) for column in rows.STATE_COLUMNS)

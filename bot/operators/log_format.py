"""Log line formats: the plain default, and JSON (one object per line) for log shippers."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
from typing import Any, TextIO

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Our lines name their context as `chat=… session=…` (STYLE: every line about a chat carries it);
# these become fields of their own, and `extra={...}` with the same names wins over the text.
CONTEXT_FIELDS = {
    "chat": "chat_id",
    "session": "session_id",
    "trigger": "trigger",
    "outcome": "outcome",
}
_CONTEXT = re.compile(r"\b(chat|session|trigger|outcome)=([^\s,;)]+)")


class JsonFormatter(logging.Formatter):
    """A Formatter, so handler filters (redaction) still see and change the record first."""

    def format(self, record: logging.LogRecord) -> str:
        message = record.getMessage()
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname,
            "logger": record.name,
            "message": message,
        }
        for key, value in _CONTEXT.findall(message):
            entry.setdefault(CONTEXT_FIELDS[key], _number_or_text(value))
        for field in CONTEXT_FIELDS.values():
            value = record.__dict__.get(field)
            if value is not None:
                entry[field] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def log_handler(log_format: str, stream: TextIO | None = None) -> logging.Handler:
    """The stderr handler for `plain` or `json` lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(
        JsonFormatter() if log_format == "json" else logging.Formatter(PLAIN_FORMAT)
    )
    return handler


def _number_or_text(value: str) -> int | str:
    return int(value) if value.isdigit() else value

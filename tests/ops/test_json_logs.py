"""COMPACTBOT_LOG_FORMAT=json: one object per line, the chat and session as fields of their own."""

from __future__ import annotations

import io
import json
import logging

from compactbot.bot.operators.log_format import JsonFormatter, log_handler
from compactbot.bot.settings.loading import load_config


def emit(handler: logging.Handler, message: str, *args: object, **extra: object) -> None:
    logger = logging.getLogger("tests.ops.json")
    logger.propagate = False
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    try:
        logger.warning(message, *args, extra=extra or None)
    finally:
        logger.handlers = []


def test_json_log_line_parses_and_carries_the_chat_id() -> None:
    stream = io.StringIO()
    handler = log_handler("json", stream)
    emit(handler, "compaction failed (chat=%s session=%d)", "telegram:-1001:42", 7)
    (line,) = stream.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["chat_id"] == "telegram:-1001:42"
    assert entry["session_id"] == 7
    assert entry["message"] == "compaction failed (chat=telegram:-1001:42 session=7)"
    assert entry["level"] == "WARNING" and entry["logger"] == "tests.ops.json"


def test_json_log_takes_trigger_and_outcome_from_extra() -> None:
    stream = io.StringIO()
    emit(log_handler("json", stream), "compaction done", trigger="hygiene", outcome="compressed")
    entry = json.loads(stream.getvalue())
    assert (entry["trigger"], entry["outcome"]) == ("hygiene", "compressed")
    assert "chat_id" not in entry


def test_json_log_keeps_a_traceback_on_its_one_line() -> None:
    stream = io.StringIO()
    handler = log_handler("json", stream)
    logger = logging.getLogger("tests.ops.json.exc")
    logger.propagate = False
    logger.handlers = [handler]
    try:
        raise ValueError("bad")
    except ValueError:
        logger.exception("failed (chat=console:main)")
    logger.handlers = []
    (line,) = stream.getvalue().splitlines()
    entry = json.loads(line)
    assert "ValueError: bad" in entry["exception"] and entry["chat_id"] == "console:main"


def test_handler_filters_still_rewrite_what_the_json_formatter_prints() -> None:
    class Redact(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.msg = str(record.msg).replace("sk-secret", "***")
            return True

    stream = io.StringIO()
    handler = log_handler("json", stream)
    handler.addFilter(Redact())
    emit(handler, "key sk-secret in (chat=%s)", "console:main")
    entry = json.loads(stream.getvalue())
    assert entry["message"] == "key *** in (chat=console:main)"
    assert isinstance(handler.formatter, JsonFormatter)


def test_plain_format_stays_the_default() -> None:
    config = load_config({}, path=None)
    assert config.logging.format == "plain"
    stream = io.StringIO()
    emit(log_handler(config.logging.format, stream), "hello (chat=%s)", "console:main")
    assert stream.getvalue().rstrip().endswith("WARNING tests.ops.json: hello (chat=console:main)")


def test_log_format_json_comes_from_the_environment() -> None:
    config = load_config({"COMPACTBOT_LOG_FORMAT": "JSON"}, path=None)
    assert config.logging.format == "json"

"""The console's tables (bot/store/protocols/console_records.py) in each backend's dialect.

Numbered 14 on both backends for now; the migration lists name them.
"""

from __future__ import annotations

CONSOLE_SCHEMA_VERSION = 14
CONSOLE_SCHEMA_NAME = "operator console: sessions, one-time sign-in links, audit log"

SQLITE_CONSOLE_SCHEMA = """
CREATE TABLE IF NOT EXISTS console_sessions (
    token_hash  TEXT PRIMARY KEY,
    who         TEXT NOT NULL,
    role        TEXT NOT NULL,
    chat_key    TEXT,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS console_sessions_expires ON console_sessions(expires_at);
CREATE TABLE IF NOT EXISTS console_links (
    token_hash  TEXT PRIMARY KEY,
    chat_key    TEXT NOT NULL,
    who         TEXT NOT NULL,
    created_at  REAL NOT NULL,
    expires_at  REAL NOT NULL,
    used_at     REAL
);
CREATE INDEX IF NOT EXISTS console_links_expires ON console_links(expires_at);
CREATE TABLE IF NOT EXISTS console_audit (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at        REAL NOT NULL,
    who       TEXT NOT NULL,
    role      TEXT NOT NULL,
    chat_key  TEXT,
    action    TEXT NOT NULL,
    detail    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS console_audit_chat ON console_audit(chat_key, id);
"""

POSTGRES_CONSOLE_SCHEMA = """
CREATE TABLE console_sessions (
    token_hash  TEXT PRIMARY KEY,
    who         TEXT NOT NULL,
    role        TEXT NOT NULL,
    chat_key    TEXT,
    created_at  DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions(expires_at);
CREATE TABLE console_links (
    token_hash  TEXT PRIMARY KEY,
    chat_key    TEXT NOT NULL,
    who         TEXT NOT NULL,
    created_at  DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL,
    used_at     DOUBLE PRECISION
);
CREATE INDEX console_links_expires ON console_links(expires_at);
CREATE TABLE console_audit (
    id        BIGSERIAL PRIMARY KEY,
    at        DOUBLE PRECISION NOT NULL,
    who       TEXT NOT NULL,
    role      TEXT NOT NULL,
    chat_key  TEXT,
    action    TEXT NOT NULL,
    detail    TEXT NOT NULL
);
CREATE INDEX console_audit_chat ON console_audit(chat_key, id);
"""

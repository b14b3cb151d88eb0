"""Numbered schema migrations for the SQLite store (applied by `schema/migrate.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from compactbot.bot.store.console_schema import (
    CONSOLE_SCHEMA_NAME,
    CONSOLE_SCHEMA_VERSION,
    SQLITE_CONSOLE_SCHEMA,
)

# The trigram tokenizer finds substrings, which is the only way to search Chinese or Japanese text
# (no spaces between words); it arrived in SQLite 3.34. unicode61 is the fallback before that.
TRIGRAM = "trigram"
UNICODE61 = "unicode61"
_TOKENIZERS = (TRIGRAM, UNICODE61)

# What the FTS index holds for a message: the text parts of its content (str, or the "text" of each
# part of a list) and its tool calls, so a search also finds a file name the agent passed to a tool.
_FTS_TEXT_NEW = """
    CASE new.content_format
        WHEN 'json' THEN coalesce((SELECT group_concat(json_extract(value, '$.text'), ' ')
                                   FROM json_each(new.content)
                                   WHERE json_type(value) = 'object'), '')
        ELSE coalesce(new.content, '')
    END || ' ' || coalesce(new.tool_calls, '')
"""
_FTS_TEXT_OLD = _FTS_TEXT_NEW.replace("new.", "old.")


def indexed_text(alias: str) -> str:
    """SQL for the text the FTS index holds of the `messages` row `alias` (what search sees)."""
    return _FTS_TEXT_NEW.replace("new.", f"{alias}.")


_SCHEMA_V1 = f"""
CREATE TABLE IF NOT EXISTS chats (
    key         TEXT PRIMARY KEY,
    platform    TEXT NOT NULL,
    title       TEXT,
    parent_key  TEXT,
    is_group    INTEGER NOT NULL DEFAULT 1,
    created_at  REAL NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_key            TEXT NOT NULL REFERENCES chats(key),
    scope_user          TEXT,
    started_at          REAL NOT NULL,
    ended_at            REAL,
    last_activity_at    REAL NOT NULL,
    active_tokens       INTEGER NOT NULL DEFAULT 0,
    active_messages     INTEGER NOT NULL DEFAULT 0,
    version             INTEGER NOT NULL DEFAULT 0,
    system_prompt       TEXT,
    compression_count   INTEGER NOT NULL DEFAULT 0,
    previous_summary    TEXT,
    strikes             INTEGER NOT NULL DEFAULT 0,
    pause_until         REAL NOT NULL DEFAULT 0,
    pause_level         INTEGER NOT NULL DEFAULT 0,
    cooldown_until      REAL NOT NULL DEFAULT 0,
    cooldown_cause      TEXT,
    failure_streak      INTEGER NOT NULL DEFAULT 0,
    last_prompt_tokens  INTEGER NOT NULL DEFAULT 0,
    verdict_pending     INTEGER NOT NULL DEFAULT 0
);
-- At most one open session per chat and scope (NULL scope = the shared session).
CREATE UNIQUE INDEX IF NOT EXISTS sessions_one_open
    ON sessions(chat_key, coalesce(scope_user, '')) WHERE ended_at IS NULL;
CREATE INDEX IF NOT EXISTS sessions_chat ON sessions(chat_key, id);

-- Ordered by seq, not id: a compaction inserts its rows before messages that arrived meanwhile.
-- AUTOINCREMENT keeps ids strictly increasing, which the compaction watermark relies on.
CREATE TABLE IF NOT EXISTS messages (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id           INTEGER NOT NULL REFERENCES sessions(id),
    seq                  INTEGER NOT NULL,
    role                 TEXT NOT NULL,
    author_id            TEXT,
    author_name          TEXT,
    content              TEXT,
    content_format       TEXT NOT NULL DEFAULT 'text'
                         CHECK (content_format IN ('text', 'json', 'null')),
    tool_calls           TEXT,
    tool_call_id         TEXT,
    name                 TEXT,
    platform_message_id  TEXT,
    tokens               INTEGER NOT NULL,
    created_at           REAL NOT NULL,
    active               INTEGER NOT NULL DEFAULT 1,
    compacted            INTEGER NOT NULL DEFAULT 0,
    kind                 TEXT NOT NULL DEFAULT 'message'
                         CHECK (kind IN ('message', 'summary', 'note'))
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_session_seq ON messages(session_id, seq);

-- Contentless: the text lives in `messages`; the index only maps tokens to message ids.
CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts
    USING fts5(text, content='', tokenize='{{tokenizer}}');
CREATE TRIGGER IF NOT EXISTS messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts(rowid, text) VALUES (new.id, {_FTS_TEXT_NEW});
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, {_FTS_TEXT_OLD});
END;
-- Only a change of the indexed text re-indexes; archiving updates active/compacted and skips this.
CREATE TRIGGER IF NOT EXISTS messages_fts_update
    AFTER UPDATE OF content, content_format, tool_calls ON messages BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, {_FTS_TEXT_OLD});
    INSERT INTO messages_fts(rowid, text) VALUES (new.id, {_FTS_TEXT_NEW});
END;

CREATE TABLE IF NOT EXISTS chat_settings (
    chat_key  TEXT NOT NULL,
    key       TEXT NOT NULL,
    value     TEXT NOT NULL,
    PRIMARY KEY (chat_key, key)
);

CREATE TABLE IF NOT EXISTS compression_events (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_key         TEXT NOT NULL,
    session_id       INTEGER NOT NULL,
    trigger          TEXT NOT NULL,
    started_at       REAL NOT NULL,
    ended_at         REAL NOT NULL,
    outcome          TEXT NOT NULL,
    messages_before  INTEGER NOT NULL DEFAULT 0,
    messages_after   INTEGER NOT NULL DEFAULT 0,
    tokens_before    INTEGER NOT NULL DEFAULT 0,
    tokens_after     INTEGER NOT NULL DEFAULT 0,
    summary_tokens   INTEGER NOT NULL DEFAULT 0,
    error            TEXT
);
CREATE INDEX IF NOT EXISTS compression_events_chat ON compression_events(chat_key, id);

CREATE TABLE IF NOT EXISTS compression_locks (
    session_id   INTEGER PRIMARY KEY,
    holder       TEXT NOT NULL,
    acquired_at  REAL NOT NULL,
    expires_at   REAL NOT NULL
);

-- user_id '' stands for "no user": NULLs never conflict, so a NULL key would defeat the upsert.
CREATE TABLE IF NOT EXISTS usage (
    chat_key           TEXT NOT NULL,
    user_id            TEXT NOT NULL DEFAULT '',
    day                TEXT NOT NULL,
    purpose            TEXT NOT NULL CHECK (purpose IN ('reply', 'compression')),
    prompt_tokens      INTEGER NOT NULL DEFAULT 0,
    completion_tokens  INTEGER NOT NULL DEFAULT 0,
    calls              INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (chat_key, user_id, day, purpose)
);

CREATE TABLE IF NOT EXISTS processed_updates (
    platform   TEXT NOT NULL,
    update_id  TEXT NOT NULL,
    seen_at    REAL NOT NULL,
    PRIMARY KEY (platform, update_id)
);
CREATE INDEX IF NOT EXISTS processed_updates_seen ON processed_updates(seen_at);

CREATE TABLE IF NOT EXISTS pins (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    chat_key    TEXT NOT NULL,
    text        TEXT NOT NULL,
    author      TEXT,
    created_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS pins_chat ON pins(chat_key, id);
"""

# Archiving and recounting filter on (session_id, active, id <= watermark); usage reports on day.
_SCHEMA_V2 = """
CREATE INDEX IF NOT EXISTS messages_session_active ON messages(session_id, active, id);
CREATE INDEX IF NOT EXISTS usage_day ON usage(day);
"""

# The session's memory (SPEC 6.11), written in the compaction's own transaction. `sources` is a
# JSON list of message ids; `memory_reread` lists messages only the extractor has read.
_SCHEMA_V3 = """
CREATE TABLE IF NOT EXISTS memory_entries (
    session_id     INTEGER NOT NULL REFERENCES sessions(id),
    entry_id       INTEGER NOT NULL,
    kind           TEXT NOT NULL,
    text           TEXT NOT NULL,
    subject        TEXT,
    speaker        TEXT,
    date           TEXT,
    sources        TEXT NOT NULL DEFAULT '[]',
    status         TEXT NOT NULL DEFAULT 'current',
    owner          TEXT,
    due            TEXT,
    answer         TEXT,
    closed_on      TEXT,
    superseded_by  INTEGER,
    origin         TEXT NOT NULL DEFAULT 'summarizer',
    PRIMARY KEY (session_id, entry_id)
);
CREATE TABLE IF NOT EXISTS memory_reread (
    session_id  INTEGER NOT NULL REFERENCES sessions(id),
    message_id  TEXT NOT NULL,
    PRIMARY KEY (session_id, message_id)
);
"""


# Updates that could not be parsed or stored: kept (payload truncated) so the operator can see
# them with `compactbot deadletters`, and acknowledged so they never stall polling. Number 4 is
# reserved for this table; 3 belongs to another change.
_SCHEMA_V4 = """
CREATE TABLE IF NOT EXISTS dead_letters (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    platform     TEXT NOT NULL,
    update_id    TEXT NOT NULL,
    received_at  REAL NOT NULL,
    error        TEXT NOT NULL,
    payload      TEXT NOT NULL,
    UNIQUE (platform, update_id)
);
"""


# Messages looked up by platform id (reply context, edits, deletes) and the old texts of edits.
_SCHEMA_V7 = """
CREATE INDEX IF NOT EXISTS messages_platform_id
    ON messages(platform_message_id) WHERE platform_message_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS message_revisions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    message_id      INTEGER NOT NULL REFERENCES messages(id),
    content         TEXT,
    content_format  TEXT NOT NULL,
    edited_at       REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS message_revisions_message ON message_revisions(message_id, id);
"""


# Limits every worker shares (SPEC 15). `hits` is a JSON list of the attempt times still in the
# window; each table is pruned by its time column.
_SCHEMA_V9 = """
CREATE TABLE IF NOT EXISTS rate_windows (
    key      TEXT PRIMARY KEY,
    hits     TEXT NOT NULL,
    last_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS rate_windows_last ON rate_windows(last_at);
CREATE TABLE IF NOT EXISTS notice_windows (
    scope       TEXT NOT NULL,
    key         TEXT NOT NULL,
    said_at     REAL NOT NULL,
    expires_at  REAL NOT NULL,
    PRIMARY KEY (scope, key)
);
CREATE INDEX IF NOT EXISTS notice_windows_expires ON notice_windows(expires_at);
CREATE TABLE IF NOT EXISTS admin_cache (
    key         TEXT PRIMARY KEY,
    is_admin    INTEGER NOT NULL,
    expires_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS admin_cache_expires ON admin_cache(expires_at);
"""


# The index is filled behind the writer (bot/store/sqlite/fts.py): a row is in messages_fts
# exactly when its id is <= fts_indexed.upto, and search scans the rows above it. Edits and
# deletes of rows not yet indexed leave the index alone; the indexer reads their current text.
_SCHEMA_V10 = f"""
DROP TRIGGER IF EXISTS messages_fts_insert;
DROP TRIGGER IF EXISTS messages_fts_delete;
DROP TRIGGER IF EXISTS messages_fts_update;
CREATE TABLE IF NOT EXISTS fts_indexed (upto INTEGER NOT NULL);
INSERT INTO fts_indexed(upto) SELECT coalesce(max(id), 0) FROM messages;
CREATE TRIGGER IF NOT EXISTS messages_fts_delete AFTER DELETE ON messages
    WHEN old.id <= (SELECT upto FROM fts_indexed) BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, {_FTS_TEXT_OLD});
END;
CREATE TRIGGER IF NOT EXISTS messages_fts_update
    AFTER UPDATE OF content, content_format, tool_calls ON messages
    WHEN old.id <= (SELECT upto FROM fts_indexed) BEGIN
    INSERT INTO messages_fts(messages_fts, rowid, text) VALUES ('delete', old.id, {_FTS_TEXT_OLD});
    INSERT INTO messages_fts(rowid, text) VALUES (new.id, {_FTS_TEXT_NEW});
END;
"""

# compression.message_hints of each row, computed when it is stored. Older rows keep NULL
# (unknown): a compaction computes theirs then, so no backfill holds the writer here.
_SCHEMA_V11 = """
ALTER TABLE messages ADD COLUMN hints INTEGER;
"""


# What each compaction cost (the console's history); threads found by their parent (budgets).
_SCHEMA_V15 = """
ALTER TABLE compression_events ADD COLUMN summary_calls INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compression_events ADD COLUMN summary_cost_tokens INTEGER NOT NULL DEFAULT 0;
CREATE INDEX IF NOT EXISTS chats_parent ON chats(parent_key);
"""


# Who each memory entry came from (SPEC 16): a JSON list of the platform user ids of its source
# rows' authors. Older entries read '[]': nobody is credited with what no row vouches for.
_SCHEMA_V16 = """
ALTER TABLE memory_entries ADD COLUMN author_ids TEXT NOT NULL DEFAULT '[]';
"""


# Whether a member's message was written by a chat admin (1), not (0) or unknown (NULL): only
# admins' rules are the chat's rules (SPEC 16). In a private chat the one member sets them.
_SCHEMA_V17 = """
ALTER TABLE messages ADD COLUMN author_admin INTEGER;
UPDATE messages SET author_admin = 1 WHERE author_id IS NOT NULL AND session_id IN
    (SELECT s.id FROM sessions s JOIN chats c ON c.key = s.chat_key WHERE c.is_group = 0);
"""

# What the memory's must-show entries need, kept with the compressor state (SQLite 18); 0 until
# the session's next compaction.
_SCHEMA_V18 = """
ALTER TABLE sessions ADD COLUMN memory_need_tokens INTEGER NOT NULL DEFAULT 0;
"""


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    script: str  # may contain {tokenizer}, filled from _TOKENIZERS only

    def render(self, tokenizer: str) -> str:
        if tokenizer not in _TOKENIZERS:
            raise ValueError(f"unknown FTS tokenizer {tokenizer!r}")
        return self.script.replace("{tokenizer}", tokenizer)


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "initial schema", _SCHEMA_V1),
    Migration(2, "indexes for archiving and usage reports", _SCHEMA_V2),
    Migration(3, "session memory entries", _SCHEMA_V3),
    Migration(4, "dead-letter table for updates that could not be ingested", _SCHEMA_V4),
    Migration(7, "platform message ids and message revisions", _SCHEMA_V7),
    Migration(9, "rate and notice windows, admin cache (shared limits)", _SCHEMA_V9),
    Migration(10, "full-text index filled behind the writer", _SCHEMA_V10),
    Migration(11, "per-message compression hints", _SCHEMA_V11),
    Migration(CONSOLE_SCHEMA_VERSION, CONSOLE_SCHEMA_NAME, SQLITE_CONSOLE_SCHEMA),
    Migration(15, "compaction cost; threads by parent", _SCHEMA_V15),
    Migration(16, "authors of memory entries", _SCHEMA_V16),
    Migration(17, "whether an author was an admin", _SCHEMA_V17),
    Migration(18, "the memory's must-show need", _SCHEMA_V18),
)
LATEST_VERSION = MIGRATIONS[-1].version

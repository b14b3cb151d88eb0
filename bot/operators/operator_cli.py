"""Operator subcommands: chats, config, compress, history (and memory), stats.

Errors: one line, exit 1.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections import Counter

from compactbot.bot import plugins
from compactbot.bot.app import App
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.operators import views as operator_views
from compactbot.bot.operators.terminal_text import terminal_safe
from compactbot.bot.settings import chat_settings
from compactbot.bot.settings.chat_settings import SettingError
from compactbot.bot.settings.config import Config
from compactbot.bot.store.backends import create_read_only_store
from compactbot.bot.store.base import SessionRecord, StoredMessage, StoreError
from compactbot.compression.memory import MemoryEntry

ERROR_EXIT_STATUS = 1
# Reports: they open the database read-only (no migrations, no session created), so they
# work on a copy the process may not write and never change a live database.
READ_ONLY_COMMANDS = frozenset({"chats", "history", "stats", "deadletters", "events"})
PAYLOAD_EXCERPT_CHARS = 200


class OperatorError(Exception):
    """A one-line problem with the operator's request."""


def _when(timestamp: float | None) -> str:
    if not timestamp:
        return "never"
    return dt.datetime.fromtimestamp(timestamp, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")


async def dispatch(command: str, args: argparse.Namespace, config: Config) -> int:
    # Operator commands read and write the store; only `compress` may need the model.
    llm = None if command == "compress" else OfflineModel()
    read_only = command in READ_ONLY_COMMANDS
    store = create_read_only_store(config.storage.database) if read_only else None
    try:
        async with App(config, llm=llm, store=store) as app:
            handler = {
                "chats": _views if getattr(args, "top", None) else _chats,
                "config": _config,
                "compress": _compress,
                "history": _history,
                "stats": _stats,
                "events": _views,
                "deadletters": _deadletters,
            }[command]
            await handler(app, args)
    except (OperatorError, SettingError, StoreError, operator_views.ViewError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ERROR_EXIT_STATUS
    return 0


async def _views(app: App, args: argparse.Namespace) -> None:
    for line in await operator_views.show(app.reports, args.command, args):
        print(terminal_safe(line))


async def _open_sessions(app: App, chat_key: str) -> list[SessionRecord]:
    """The chat's open sessions (one, or one per member), read without creating any."""
    sessions = await app.services.sessions.list_sessions(chat_key)
    return [s for s in sessions if s.ended_at is None]


async def _require_chat(app: App, key: str | None) -> str:
    if not key:
        raise OperatorError("a chat key is required (see `compactbot chats`)")
    if await app.services.chats.get_chat(key) is None:
        raise OperatorError(f"unknown chat {key!r} (see `compactbot chats`)")
    return key


async def _chats(app: App, args: argparse.Namespace) -> None:
    services = app.services
    window = services.context_length
    chats = await services.chats.list_chats()
    if not chats:
        print("no chats yet")
        return
    jobs = plugins.jobs()
    for chat in chats:
        sessions = await _open_sessions(app, chat.key)
        events = await services.compaction_events.list_compression_events(
            chat_key=chat.key, limit=20
        )
        last = next((e for e in events if e.outcome in ("compressed", "fallback")), None)
        settings = await services.settings_for(chat.key)
        line = (
            f"{chat.key}  {chat.platform}  {chat.title or '-'}  "
            f"{sum(s.active_messages for s in sessions)} msgs  "
            f"{sum(s.active_tokens for s in sessions):,}/{window:,} tokens  "
            f"{sum(s.compressor.compression_count for s in sessions)} compactions  "
            f"last {_when(last.ended_at if last else None)}"
            + "".join(f"  {j.name} {j.next_run_text(settings, app.config)}" for j in jobs)
        )
        print(terminal_safe(line))  # a chat's title is the members' to choose


async def _config(app: App, args: argparse.Namespace) -> None:
    chats, stored = app.services.chats, app.services.stored_settings
    chat = args.chat
    if args.action != "get" and not args.key:
        raise OperatorError(f"config {args.action} needs a KEY")
    if args.action == "get":
        await _require_chat(app, chat)
        raw, parent_raw = await app.services.raw_settings(chat)
        keys = [args.key.lower()] if args.key else list(chat_settings.SETTINGS)
        for key in keys:
            print(chat_settings.describe(key, app.config, raw, parent_raw))
        return
    if args.action == "unset":
        key = chat_settings.check_key(args.key)
        await stored.unset_chat_setting(chat, key)
        print(f"{chat}: {key} reset to the default")
        return
    if args.value is None:
        raise OperatorError("config set needs a VALUE")
    # Operators are not held to the chat-admin bounds, only to types and hard ranges.
    value = chat_settings.parse_setting(args.key, args.value, app.config, enforce_bounds=False)
    if await chats.get_chat(chat) is None:
        platform = chat.split(":", 1)[0]
        await chats.upsert_chat(chat, platform)
    key = chat_settings.check_key(args.key)
    await stored.set_chat_setting(chat, key, value)
    print(f"{chat}: {key} = {value}")


async def _compress(app: App, args: argparse.Namespace) -> None:
    services = app.services
    if args.overnight:
        reports = [
            found
            for job in plugins.jobs()
            for found in await job.run_now(services, ignore_window=args.now)
        ]
        for key, report in reports:
            print(
                f"{key}: {report.outcome} {report.messages_before} → {report.messages_after} "
                f"messages, {report.tokens_before:,} → {report.tokens_after:,} tokens"
            )
        if not reports:
            print("no session is due for overnight compaction")
        return
    chat = await _require_chat(app, args.chat)
    session = await services.sessions.active_session(chat)
    settings = await services.settings_for(chat)
    report = await services.compactor.compact(
        session.id,
        trigger="manual",
        settings=services.compaction_settings(settings),
        system_prompt=await services.system_prompt_for(chat),
        force=True,
        focus=args.focus,
    )
    print(
        f"{chat}: {report.outcome} {report.messages_before} → {report.messages_after} messages, "
        f"{report.tokens_before:,} → {report.tokens_after:,} tokens"
        + (f" ({report.error})" if report.error else "")
    )
    if report.outcome in ("aborted", "error", "locked"):
        raise OperatorError(f"compaction of {chat} did not complete: {report.outcome}")


async def _history(app: App, args: argparse.Namespace) -> None:
    chat = await _require_chat(app, args.chat)
    transcript = app.services.transcript
    if args.memory:
        session = await app.services.sessions.active_session(chat)
        memory = await transcript.load_memory(session.id)
        if not memory.entries:
            print(f"{chat}: nothing remembered yet (session {session.id})")
        for entry in memory.entries:
            print(_memory_line(entry))
        return
    rows = await transcript.load_history(chat, include_archived=args.all)
    if not args.all:
        shared = [s for s in await _open_sessions(app, chat) if s.scope_user is None]
        rows = await transcript.load_active(shared[0].id) if shared else []
    for row in rows:
        print(_history_line(row))


def _history_line(row: StoredMessage) -> str:
    marks = "S" if row.kind == "summary" else " "
    marks += " " if row.active else "a"
    who = row.author_name or row.role
    line = f"{row.id:>7} s{row.session_id:<4} {marks} {_when(row.created_at)} {who}: {row.text}"
    return terminal_safe(line)


def _memory_line(entry: MemoryEntry) -> str:
    """#id kind [status] [speaker, date] text (subject) <- source message ids"""
    status = "" if entry.status == "current" else f" [{entry.status}"
    if entry.superseded_by is not None:
        status += f" by #{entry.superseded_by}"
    status += "]" if status else ""
    who = ", ".join(p for p in (entry.speaker, entry.date) if p)
    subject = f" (subject: {entry.subject})" if entry.subject else ""
    sources = " <- " + ", ".join(entry.sources) if entry.sources else ""
    line = f"#{entry.id:<5} {entry.kind}{status} [{who}] {entry.text}{subject}{sources}"
    return terminal_safe(line)


async def _stats(app: App, args: argparse.Namespace) -> None:
    services = app.services
    chats = await services.chats.list_chats()
    sessions = await services.sessions.list_sessions()
    events = await services.compaction_events.list_compression_events(limit=100_000)
    outcomes = Counter(e.outcome for e in events)
    triggers = Counter(e.trigger for e in events)
    print(f"chats: {len(chats)}  sessions: {len(sessions)}")
    print(f"active messages: {sum(s.active_messages for s in sessions):,}")
    print(f"active tokens: {sum(s.active_tokens for s in sessions):,}")
    print("compactions: " + (", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) or "none"))
    print("triggers: " + (", ".join(f"{k} {v}" for k, v in sorted(triggers.items())) or "none"))


async def _deadletters(app: App, args: argparse.Namespace) -> None:
    letters = await app.services.dead_letters.list_dead_letters(limit=args.limit)
    if not letters:
        print("no dead letters")
        return
    for letter in letters:
        payload = letter.payload[:PAYLOAD_EXCERPT_CHARS].replace("\n", " ")
        more = "…" if len(letter.payload) > PAYLOAD_EXCERPT_CHARS else ""
        print(
            f"#{letter.id} {letter.platform} update {letter.update_id} "
            f"{_when(letter.received_at)}: {letter.error}\n    {payload}{more}"
        )

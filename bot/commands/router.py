"""The chat commands of every adapter: a public router and an admin router behind one filter.

Commands run in the ordered ingress, right after they are stored, so a command such as /new
takes effect for every message after it; their replies are queued in the chat's lane.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from compactbot.bot.commands.catchup import catchup
from compactbot.bot.commands.console_link import console_link
from compactbot.bot.commands.forget import forget, purge
from compactbot.bot.commands.status_report import status_text, usage_text
from compactbot.bot.compaction.memory_cap import memory_over_cap
from compactbot.bot.compaction.report import CompactionReport, ReportSink
from compactbot.bot.events import Adapter, DeliveryError, InboundMessage, ReplyTarget
from compactbot.bot.i18n import language_for, localize
from compactbot.bot.ingress.limits import utc_day
from compactbot.bot.services import Services
from compactbot.bot.settings import chat_settings
from compactbot.bot.settings.chat_settings import ChatSettings, SettingError
from compactbot.bot.store.base import NewMessage

log = logging.getLogger(__name__)

_COMMAND = re.compile(
    r"^/([A-Za-z][A-Za-z0-9_]{0,31})(?:@([A-Za-z0-9_]+))?(?:\s+(.*))?$", re.DOTALL
)
MAX_PIN_CHARS = 500
# Platforms where a member's id is also their private chat with the bot.
PRIVATE_CHAT_PLATFORMS = frozenset({"telegram"})

Reply = Callable[[str], Awaitable[None]]


class CommandHost(Protocol):
    """What commands need of the gateway (which satisfies it), so neither imports the other."""

    @property
    def services(self) -> Services: ...

    async def is_admin(self, message: InboundMessage, adapter: Adapter) -> bool: ...
    async def settings_changed(self, chat_key: str) -> None: ...
    def start_compaction(
        self,
        session_id: int,
        chat_key: str,
        settings: ChatSettings,
        *,
        trigger: str,
        force: bool,
        focus: str | None,
        on_done: ReportSink,
    ) -> bool:
        """Compact in the background, `on_done` after it ends; False if one is already running."""
        ...


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    args: str
    # The `@name` of `/cmd@name`: the platform already dropped commands for other bots.
    target: str | None = None


@dataclass(frozen=True, slots=True)
class CommandContext:
    message: InboundMessage
    adapter: Adapter
    host: CommandHost
    session_id: int
    settings: ChatSettings
    # Sends a line to the chat later (a background compaction's report), in the chat's order.
    reply: Reply


Handler = Callable[[str, CommandContext], Awaitable[list[str]]]
Filter = Callable[[CommandContext], Awaitable[bool]]


def parse_command(text: str) -> Command | None:
    """`/name[@bot] args` → Command; None for ordinary text."""
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    return Command(match.group(1).lower(), (match.group(3) or "").strip(), match.group(2))


HELP_TEXT = """\
Commands:
/status — context gauge, compactions, memory, breaker state
/compress [focus] — compact older history now (/compact; --show prints the summary)
/new — start a new conversation (/reset); the old one stays searchable
/config [key [value|default]] — per-chat settings
/pin <text> — keep a fact verbatim forever · /pins · /unpin N
/usage — tokens used today and this month
/summary [2h|@name|topic] — what you missed since your last message (/catchup)
/console — a one-time sign-in link to the web console, sent to you privately (admins)
/forget — (as a reply) erase your message · /forget all — everything you wrote here · /purge
In groups, /compress, /new, /config with a value, /pin and /unpin need chat-admin rights."""


async def _help(args: str, ctx: CommandContext) -> list[str]:
    return [HELP_TEXT]


async def _status(args: str, ctx: CommandContext) -> list[str]:
    services = ctx.host.services
    session = await services.sessions.get_session(ctx.session_id)
    chat_key, transcript = session.chat_key, services.transcript
    events = await services.compaction_events.list_compression_events(chat_key=chat_key, limit=20)
    last = next((e for e in events if e.outcome in ("compressed", "fallback")), None)
    memory = await transcript.load_memory(session.id)
    over_cap = await memory_over_cap(services, ctx.settings, session)
    return [
        status_text(
            session,
            context_length=services.window_for(ctx.settings),
            threshold=ctx.settings.threshold,
            hygiene_threshold=ctx.settings.hygiene_threshold,
            max_tokens=services.config.model.max_tokens,
            archived_messages=await transcript.count_archived(chat_key),
            last_compaction=last,
            now=services.clock(),
            memory_counts=memory.counts(),
            memory_over_cap=over_cap,
        )
    ]


async def _compress(args: str, ctx: CommandContext) -> list[str]:
    show = "--show" in args.split()
    focus = " ".join(word for word in args.split() if word != "--show") or None

    async def report_done(report: CompactionReport) -> None:
        for line in compress_report_lines(report, focus=focus, show=show):
            await ctx.reply(line)

    started = ctx.host.start_compaction(
        ctx.session_id,
        ctx.message.chat_key,
        ctx.settings,
        trigger="manual",
        force=True,
        focus=focus,
        on_done=report_done,
    )
    if not started:
        return ["Another compaction of this chat is running; try again in a moment."]
    # The chat keeps being answered from the current transcript; the report follows the commit.
    return []


def compress_report_lines(report: CompactionReport, *, focus: str | None, show: bool) -> list[str]:
    if report.outcome == "locked":
        return ["Another compaction of this chat is running; try again in a moment."]
    if report.outcome in ("aborted", "error", "conflict"):
        return [f"⚠️ Compression aborted ({report.error or 'summary failed'}). Nothing was lost."]
    if not report.changed:
        return [_why_not_compressed(report)]
    lines = [
        f"🗜️ Compressed: {report.messages_before} → {report.messages_after} messages, "
        f"{report.tokens_before:,} → {report.tokens_after:,} tokens"
        + (f" (focus: {focus})" if focus else "")
        + (
            " — automatic summary unavailable, used the built-in one"
            if report.outcome == "fallback"
            else ""
        )
    ]
    if show and report.summary:
        lines.append(report.summary)
    return lines


def _why_not_compressed(report: CompactionReport) -> str:
    """The true reason a forced compaction changed nothing."""
    size = f"{report.messages_before} messages, {report.tokens_before:,} tokens"
    if report.error == "summary not smaller":
        return (
            f"Nothing compressed ({size}): a summary of the older messages would not be smaller "
            "than the messages themselves, so they stay as they are."
        )
    if report.outcome == "conflict":
        return "Another change to this chat landed first; nothing was compressed. Try again."
    if report.outcome == "error":
        return f"⚠️ Compression failed ({report.error or 'error'}). Nothing was lost."
    return f"Nothing to compress yet ({size}): the recent messages are all kept verbatim."


async def _new(args: str, ctx: CommandContext) -> list[str]:
    sessions = ctx.host.services.sessions
    old = await sessions.get_session(ctx.session_id)
    await sessions.new_session(old.chat_key, old.scope_user)
    return ["🆕 Started a new conversation. The previous one is kept and stays searchable."]


async def _config(args: str, ctx: CommandContext) -> list[str]:
    services = ctx.host.services
    store = services.stored_settings
    key_raw, _, value = args.partition(" ")
    key, value = key_raw.strip().lower(), value.strip()
    chat_key = ctx.message.chat_key
    raw, parent_raw = await services.raw_settings(chat_key)
    if not key:
        listing = chat_settings.describe_all(services.config, raw, parent_raw)
        return ["⚙️ Settings for this chat:\n" + "\n".join(str(d) for d in listing)]
    if not value:
        try:
            return [str(chat_settings.describe(key, services.config, raw, parent_raw))]
        except SettingError as exc:
            return [str(exc)]
    if not await is_chat_admin(ctx):
        return [_refusal(f"/config {key} <value>")]
    try:
        if value.lower() == "default":
            await store.unset_chat_setting(
                chat_key, chat_settings.check_key(key, enforce_bounds=True)
            )
            message = f"✅ {key} reset to the default."
        else:
            normalized = chat_settings.parse_setting(
                key, value, services.config, enforce_bounds=True
            )
            await store.set_chat_setting(chat_key, key, normalized)
            message = f"✅ {key} = {normalized} (takes effect with the next message)"
    except SettingError as exc:
        return [str(exc)]
    await ctx.host.settings_changed(chat_key)
    return [message]


async def _pin(args: str, ctx: CommandContext) -> list[str]:
    text = args.strip()
    if not text:
        return ["Usage: /pin <text to keep verbatim>"]
    if len(text) > MAX_PIN_CHARS:
        return [f"A pin can be at most {MAX_PIN_CHARS} characters."]
    store = ctx.host.services.pins
    pin = await store.add_pin(ctx.message.chat_key, text, ctx.message.author_name)
    count = len(await store.list_pins(ctx.message.chat_key))
    ack = f"📌 Pinned #{count}: {pin.text}"
    # Until the next compaction rebuilds the system prompt, the pin lives in the transcript.
    await _remember_in_transcript(ctx, f"/pin {text}", ack)
    return [ack]


async def _pins(args: str, ctx: CommandContext) -> list[str]:
    pins = await ctx.host.services.pins.list_pins(ctx.message.chat_key)
    if not pins:
        return ["No pins in this chat. Admins can add one with /pin <text>."]
    return ["📌 Pins:\n" + "\n".join(f"{i}. {p.text}" for i, p in enumerate(pins, 1))]


async def _unpin(args: str, ctx: CommandContext) -> list[str]:
    store = ctx.host.services.pins
    pins = await store.list_pins(ctx.message.chat_key)
    if not pins:
        return ["No pins."]
    number = args.strip()
    # isascii: "²".isdigit() is True but int("²") raises.
    if not (number.isascii() and number.isdigit()) or not 1 <= int(number) <= len(pins):
        return [f"Usage: /unpin N, where N is a number from 1 to {len(pins)} (see /pins)."]
    pin = pins[int(number) - 1]
    await store.remove_pin(ctx.message.chat_key, pin.id)
    ack = f"Unpinned #{number}: {pin.text}"
    await _remember_in_transcript(ctx, f"/unpin {number}", ack)
    return [ack]


async def _usage(args: str, ctx: CommandContext) -> list[str]:
    today = utc_day(ctx.host.services.clock())
    rows = await ctx.host.services.usage.usage(ctx.message.chat_key, today[:8] + "01")
    return [usage_text(rows, today=today)]


async def _summary(args: str, ctx: CommandContext) -> list[str]:
    settings = ctx.settings
    message = ctx.message
    digest = await catchup(
        ctx.host.services,
        chat_key=message.chat_key,
        asker_id=message.author_id,
        args=args,
        language=None if settings.language == "auto" else settings.language,
    )
    if message.platform in PRIVATE_CHAT_PLATFORMS and message.is_group:
        # Private to the asker where the bot can reach them; Telegram refuses a bot that the
        # member never started, and then the group gets the digest instead.
        private = ReplyTarget(message.platform, message.author_id)
        language = language_for(settings.language, message.language_code)
        try:
            await ctx.adapter.send(private, localize(digest, language))
        except DeliveryError:
            log.info("digest not deliverable privately (chat=%s)", message.chat_key)
        else:
            return [f"📬 {message.author_name}, I sent you the summary privately."]
    return [digest]


async def _console(args: str, ctx: CommandContext) -> list[str]:
    return await console_link(ctx.host.services, ctx.message, ctx.adapter)


async def _remember_in_transcript(ctx: CommandContext, command: str, ack: str) -> None:
    services = ctx.host.services
    message = ctx.message
    user = {"role": "user", "content": f"[{message.author_name}] {command}"}
    bot = {"role": "assistant", "content": ack}
    await services.transcript_writes.append_messages(
        ctx.session_id,
        [
            NewMessage.from_openai(
                user,
                services.counter.count_message(user),
                author_id=message.author_id,
                author_name=message.author_name,
            ),
            NewMessage.from_openai(bot, services.counter.count_message(bot)),
        ],
    )


async def is_chat_admin(ctx: CommandContext) -> bool:
    """The one admin filter: chat admin on the platform, an operator, or a private chat."""
    allowed = await ctx.host.is_admin(ctx.message, ctx.adapter)
    if not allowed:
        log.info("admin command refused (chat=%s)", ctx.message.chat_key)
    return allowed


def _refusal(command: str) -> str:
    return f"⛔ {command} needs chat-admin rights here. Nothing was changed."


@dataclass(frozen=True, slots=True)
class CommandRouter:
    """Handlers by command name, all behind the router's filter (aiogram's `router.filter`)."""

    handlers: Mapping[str, Handler]
    filter: Filter | None = None

    async def handle(self, command: Command, ctx: CommandContext) -> list[str]:
        if self.filter is not None and not await self.filter(ctx):
            return [_refusal(f"/{command.name}")]
        return await self.handlers[command.name](command.args, ctx)


PUBLIC_COMMANDS = CommandRouter(
    {
        "help": _help,
        "start": _help,
        "status": _status,
        "config": _config,  # reading is public; a change passes `is_chat_admin` itself
        "pins": _pins,
        "usage": _usage,
        "summary": _summary,
        "catchup": _summary,
        "forget": forget,
    }
)
ADMIN_COMMANDS = CommandRouter(
    {
        "compress": _compress,
        "compact": _compress,
        "new": _new,
        "reset": _new,
        "pin": _pin,
        "unpin": _unpin,
        "console": _console,
        "purge": purge,
    },
    filter=is_chat_admin,
)
ROUTERS = (PUBLIC_COMMANDS, ADMIN_COMMANDS)


def find_router(name: str) -> CommandRouter | None:
    return next((r for r in ROUTERS if name in r.handlers), None)


def ignored_command(command: Command, message: InboundMessage) -> bool:
    """Unknown bare commands in groups belong to other bots: not ours to answer or store."""
    return find_router(command.name) is None and message.is_group and command.target is None


async def run_command(command: Command, ctx: CommandContext) -> list[str]:
    """Replies for one command; an unknown one answers only when it was meant for us."""
    router = find_router(command.name)
    if router is None:
        if ignored_command(command, ctx.message) or not ctx.message.addressed:
            return []
        return [f"Unknown command /{command.name}. Try /help."]
    return await router.handle(command, ctx)

"""The chat commands, shared by every adapter, with one admin check for the destructive ones."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot import chat_settings
from bot.catchup import catchup
from bot.chat_settings import ChatSettings, SettingError
from bot.events import Adapter, DeliveryError, InboundMessage, ReplyTarget
from bot.i18n import language_for, localize
from bot.limits import utc_day
from bot.status_report import status_text, usage_text
from bot.store.base import NewMessage

if TYPE_CHECKING:
    from bot.gateway import Gateway

log = logging.getLogger(__name__)

_COMMAND = re.compile(r"^/([A-Za-z][A-Za-z0-9_]{0,31})(?:@[A-Za-z0-9_]+)?(?:\s+(.*))?$", re.DOTALL)
MAX_PIN_CHARS = 500
# Platforms where a member's id is also their private chat with the bot.
PRIVATE_CHAT_PLATFORMS = frozenset({"telegram"})


@dataclass(frozen=True, slots=True)
class CommandContext:
    message: InboundMessage
    adapter: Adapter
    gateway: Gateway
    session_id: int
    settings: ChatSettings


Handler = Callable[[str, CommandContext], Awaitable[list[str]]]


def parse_command(text: str) -> tuple[str, str] | None:
    """`/name[@bot] args` → (name, args); None for ordinary text."""
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    return match.group(1).lower(), (match.group(2) or "").strip()


HELP_TEXT = """\
Commands:
/status — context gauge, compactions, breaker state
/compress [focus] — compact older history now (/compact; --show prints the summary)
/new — start a new conversation (/reset); the old one stays searchable
/config [key [value|default]] — per-chat settings
/pin <text> — keep a fact verbatim forever · /pins · /unpin N
/usage — tokens used today and this month
/summary [2h|@name|topic] — what you missed since your last message (/catchup)
In groups, /compress, /new, /config with a value, /pin and /unpin need chat-admin rights."""


async def _help(args: str, ctx: CommandContext) -> list[str]:
    return [HELP_TEXT]


async def _status(args: str, ctx: CommandContext) -> list[str]:
    services = ctx.gateway.services
    store = services.store
    session = await store.get_session(ctx.session_id)
    events = await store.list_compression_events(chat_key=session.chat_key, limit=20)
    last = next((e for e in events if e.outcome in ("compressed", "fallback")), None)
    return [
        status_text(
            session,
            context_length=services.window_for(ctx.settings),
            threshold=ctx.settings.threshold,
            max_tokens=services.config.model.max_tokens,
            archived_messages=await store.count_archived(session.chat_key),
            last_compaction=last,
            now=services.clock(),
        )
    ]


async def _compress(args: str, ctx: CommandContext) -> list[str]:
    show = "--show" in args.split()
    focus = " ".join(word for word in args.split() if word != "--show") or None
    services = ctx.gateway.services
    report = await services.compactor.compact(
        ctx.session_id,
        trigger="manual",
        settings=services.compaction_settings(ctx.settings),
        system_prompt=await services.system_prompt_for(ctx.message.chat_key),
        force=True,
        focus=focus,
    )
    if report.outcome == "locked":
        return ["Another compaction of this chat is running; try again in a moment."]
    if report.outcome == "aborted":
        return [f"⚠️ Compression aborted ({report.error or 'summary failed'}). Nothing was lost."]
    if not report.changed:
        return [
            f"Nothing to compress yet ({report.messages_before} messages, "
            f"{report.tokens_before:,} tokens): the recent messages are all kept verbatim."
        ]
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


async def _new(args: str, ctx: CommandContext) -> list[str]:
    store = ctx.gateway.services.store
    old = await store.get_session(ctx.session_id)
    await store.new_session(old.chat_key, old.scope_user)
    return ["🆕 Started a new conversation. The previous one is kept and stays searchable."]


async def _config(args: str, ctx: CommandContext) -> list[str]:
    services = ctx.gateway.services
    store = services.store
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
    if not await _require_admin(ctx, f"/config {key}"):
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
    await ctx.gateway.settings_changed(chat_key)
    return [message]


async def _pin(args: str, ctx: CommandContext) -> list[str]:
    text = args.strip()
    if not text:
        return ["Usage: /pin <text to keep verbatim>"]
    if len(text) > MAX_PIN_CHARS:
        return [f"A pin can be at most {MAX_PIN_CHARS} characters."]
    store = ctx.gateway.services.store
    pin = await store.add_pin(ctx.message.chat_key, text, ctx.message.author_name)
    count = len(await store.list_pins(ctx.message.chat_key))
    ack = f"📌 Pinned #{count}: {pin.text}"
    # Until the next compaction rebuilds the system prompt, the pin lives in the transcript.
    await _remember_in_transcript(ctx, f"/pin {text}", ack)
    return [ack]


async def _pins(args: str, ctx: CommandContext) -> list[str]:
    pins = await ctx.gateway.services.store.list_pins(ctx.message.chat_key)
    if not pins:
        return ["No pins in this chat. Admins can add one with /pin <text>."]
    return ["📌 Pins:\n" + "\n".join(f"{i}. {p.text}" for i, p in enumerate(pins, 1))]


async def _unpin(args: str, ctx: CommandContext) -> list[str]:
    store = ctx.gateway.services.store
    pins = await store.list_pins(ctx.message.chat_key)
    if not args.strip().isdigit() or not 1 <= int(args) <= len(pins):
        return [f"Usage: /unpin N, where N is 1–{len(pins)} from /pins." if pins else "No pins."]
    pin = pins[int(args) - 1]
    await store.remove_pin(ctx.message.chat_key, pin.id)
    ack = f"Unpinned #{args.strip()}: {pin.text}"
    await _remember_in_transcript(ctx, f"/unpin {args.strip()}", ack)
    return [ack]


async def _usage(args: str, ctx: CommandContext) -> list[str]:
    today = utc_day(ctx.gateway.services.clock())
    rows = await ctx.gateway.services.store.usage(ctx.message.chat_key, today[:8] + "01")
    return [usage_text(rows, today=today)]


async def _summary(args: str, ctx: CommandContext) -> list[str]:
    settings = ctx.settings
    message = ctx.message
    digest = await catchup(
        ctx.gateway.services,
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


async def _remember_in_transcript(ctx: CommandContext, command: str, ack: str) -> None:
    services = ctx.gateway.services
    message = ctx.message
    user = {"role": "user", "content": f"[{message.author_name}] {command}"}
    bot = {"role": "assistant", "content": ack}
    await services.store.append_messages(
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


async def _require_admin(ctx: CommandContext, command: str) -> bool:
    allowed = await ctx.gateway.is_admin(ctx.message, ctx.adapter)
    if not allowed:
        log.info("admin command refused (chat=%s command=%s)", ctx.message.chat_key, command)
    return allowed


def _refusal(command: str) -> str:
    return f"⛔ {command} needs chat-admin rights here. Nothing was changed."


HANDLERS: dict[str, Handler] = {
    "help": _help,
    "start": _help,
    "status": _status,
    "compress": _compress,
    "compact": _compress,
    "new": _new,
    "reset": _new,
    "config": _config,
    "pin": _pin,
    "pins": _pins,
    "unpin": _unpin,
    "usage": _usage,
    "summary": _summary,
    "catchup": _summary,
}
ADMIN_ONLY = frozenset({"compress", "compact", "new", "reset", "pin", "unpin"})


async def run_command(name: str, args: str, ctx: CommandContext) -> list[str]:
    """Replies for one command; unknown commands answer only when the bot was addressed."""
    handler = HANDLERS.get(name)
    if handler is None:
        return [f"Unknown command /{name}. Try /help."] if ctx.message.addressed else []
    if name in ADMIN_ONLY and not await _require_admin(ctx, name):
        return [_refusal(f"/{name}")]
    return await handler(args, ctx)

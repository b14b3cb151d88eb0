"""`compactbot` command line: run the bot, open the console room, and operator commands."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from compactbot.bot.events import StartupError
from compactbot.bot.operators import store_cli
from compactbot.bot.operators.log_format import log_handler
from compactbot.bot.operators.log_redaction import config_secrets, install_log_redaction
from compactbot.bot.settings.config import Config, exit_on_config_error
from compactbot.bot.settings.dotenv import read_dotenv
from compactbot.bot.settings.loading import load_config
from compactbot.bot.store.base import StoreError

if TYPE_CHECKING:
    from compactbot.bot import plugins

log = logging.getLogger("compactbot")

# Long-running services log at INFO; everything else is quiet unless asked.
SERVICE_COMMANDS = ("run", "worker", "ingress")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compactbot",
        description="Group-chat LLM bot whose conversations never overflow.",
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("run", help="start every configured platform (console room when none)")

    worker = sub.add_parser("worker", help="answer turns from PostgreSQL (several processes)")
    worker.add_argument(
        "--shards", type=shard_ids, metavar="IDS", help="Discord shard ids, e.g. 0-3 or 0,2,5"
    )
    worker.add_argument("--shard-count", type=int, metavar="N", help="Discord shards in all")
    sub.add_parser("ingress", help="serve the Telegram webhook into PostgreSQL")

    console = sub.add_parser("console", help="a local group chat in this terminal")
    console.add_argument("--room", default="main", help="room name (its history persists)")
    console.add_argument("--admin", action="append", default=[], metavar="NAME")
    console.add_argument("--model", choices=["offline", "configured"], default="configured")

    chats = sub.add_parser("chats", help="list chats with size, tokens and last compaction")
    chats.add_argument(
        "--top",
        choices=["tokens", "compactions", "failures"],
        help="rank chats: tokens used, compactions, or failed compactions",
    )
    chats.add_argument("--days", type=int, default=30, help="with --top tokens: usage window")
    chats.add_argument("--limit", type=int, default=20, help="with --top: how many chats")

    events = sub.add_parser("events", help="a chat's compaction history")
    events.add_argument("chat")
    events.add_argument("--limit", type=int, default=50, help="newest N events")

    doctor = sub.add_parser("doctor", help="check configuration, store, model and platforms")
    doctor.add_argument("--live", action="store_true", help="also send one tiny completion")

    config = sub.add_parser("config", help="per-chat settings (operator: no bounds)")
    config.add_argument("action", choices=["get", "set", "unset"])
    config.add_argument("chat", help="chat key, e.g. telegram:-1001234 or console:main")
    config.add_argument("key", nargs="?")
    config.add_argument("value", nargs="?")

    compress = sub.add_parser("compress", help="compact a chat now, or run the overnight job")
    compress.add_argument("chat", nargs="?")
    compress.add_argument("--focus")
    compress.add_argument("--overnight", action="store_true", help="run the overnight selection")
    compress.add_argument("--now", action="store_true", help="ignore the quiet window")

    history = sub.add_parser("history", help="show a chat's transcript")
    history.add_argument("chat")
    history.add_argument("--all", action="store_true", help="include archived rows")
    history.add_argument(
        "--memory", action="store_true", help="list the session's memory entries and sources"
    )

    sub.add_parser("stats", help="totals and compaction outcomes")
    store_cli.add_parser(sub)
    store_cli.add_purge_parser(sub)

    deadletters = sub.add_parser("deadletters", help="updates that could not be ingested")
    deadletters.add_argument("--limit", type=int, default=50, help="newest first, this many")
    return parser


def shard_ids(text: str) -> tuple[int, ...]:
    """`0-3` or `0,2,5` (or both, `0-3,8`) as shard ids."""
    ids: list[int] = []
    try:
        for part in text.split(","):
            first, _, last = part.partition("-")
            ids.extend(range(int(first), int(last or first) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not shard ids: {text!r} (e.g. 0-3 or 0,2,5)") from None
    if not ids or min(ids) < 0:
        raise argparse.ArgumentTypeError(f"not shard ids: {text!r} (e.g. 0-3 or 0,2,5)")
    return tuple(sorted(set(ids)))


def worker_role(args: argparse.Namespace) -> plugins.Role | None:
    """The worker's role from its flags; None (after one line on stderr) when they disagree."""
    shards, count = args.shards, args.shard_count
    if (shards is None) != (count is None):
        print("compactbot worker: --shards and --shard-count go together", file=sys.stderr)
        return None
    if shards is not None and (count < 1 or max(shards) >= count):
        print(f"compactbot worker: shard ids must be below --shard-count {count}", file=sys.stderr)
        return None
    from compactbot.bot.plugins import Role

    return Role("worker", shards, count)


def configure_logging(config: Config, *, interactive: bool) -> None:
    """INFO for the service; the console and operator commands stay quiet unless asked."""
    explicit = "COMPACTBOT_LOG_LEVEL" in os.environ
    level = config.logging.level if explicit or not interactive else "WARNING"
    logging.basicConfig(level=level, handlers=[log_handler(config.logging.format)])
    # httpx logs full request URLs at INFO; Telegram URLs embed the bot token. The filter below
    # masks them anyway; this keeps the noise out.
    # openai 3.x talks through httpx2 / httpcore2, which log every request the same way.
    for name in ("httpx", "httpcore", "httpx2", "httpcore2"):
        logging.getLogger(name).setLevel(logging.WARNING)
    install_log_redaction(config_secrets(config))


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    command = args.command or "run"
    # The real environment wins over .env, as it wins over the YAML file.
    env = {**read_dotenv(), **os.environ}
    with exit_on_config_error():
        config = load_config(env)
    quiet = command not in SERVICE_COMMANDS or (
        config.telegram.token is None and config.discord.token is None
    )
    configure_logging(config, interactive=quiet)
    try:
        code = asyncio.run(_dispatch(command, args, config))
    except KeyboardInterrupt:
        code = 0
    except BrokenPipeError:
        # `compactbot history … | head`: the reader has gone, which is not an error. Point
        # stdout at devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except (StartupError, StoreError, OSError) as exc:
        # What an operator fixes (a token, a database URL, a port) is one line, not a traceback.
        log.debug("start-up failed", exc_info=True)
        print(f"compactbot: could not start: {exc}", file=sys.stderr)
        code = 1
    sys.exit(code)


async def _dispatch(command: str, args: argparse.Namespace, config: Config) -> int:
    from compactbot.bot import modes
    from compactbot.bot.operators import operator_cli

    if command == "doctor":
        from compactbot.bot.operators.doctor import run_doctor

        return await run_doctor(config, live=args.live)
    if command == "run":
        return await modes.run(config)
    if command in ("worker", "ingress"):
        from compactbot.bot.workers import worker_mode

        if command == "ingress":
            return await worker_mode.ingress(config)
        role = worker_role(args)
        return await worker_mode.worker(config, role) if role is not None else 2
    if command == "store":
        return await store_cli.dispatch(args)
    if command == "purge":
        return await store_cli.purge(args, config)
    if command == "console":
        return await modes.console(
            config, room=args.room, admins=args.admin, offline=args.model == "offline"
        )
    return await operator_cli.dispatch(command, args, config)

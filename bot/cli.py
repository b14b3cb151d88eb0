"""`compactbot` command line: run the bot, open the console room, and operator commands."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence

from bot.config import Config, exit_on_config_error, load_config
from bot.dotenv import read_dotenv

log = logging.getLogger("compactbot")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="compactbot",
        description="Group-chat LLM bot whose conversations never overflow.",
    )
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("run", help="start every configured platform (console room when none)")

    console = sub.add_parser("console", help="a local group chat in this terminal")
    console.add_argument("--room", default="main", help="room name (its history persists)")
    console.add_argument("--admin", action="append", default=[], metavar="NAME")
    console.add_argument("--model", choices=["offline", "configured"], default="configured")

    sub.add_parser("chats", help="list chats with size, tokens and last compaction")

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
    return parser


def configure_logging(config: Config, *, interactive: bool) -> None:
    """INFO for the service; the console and operator commands stay quiet unless asked."""
    explicit = "COMPACTBOT_LOG_LEVEL" in os.environ
    level = config.logging.level if explicit or not interactive else "WARNING"
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # httpx logs full request URLs at INFO; Telegram URLs embed the bot token.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("httpcore").setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    command = args.command or "run"
    # The real environment wins over .env, as it wins over the YAML file.
    env = {**read_dotenv(), **os.environ}
    with exit_on_config_error():
        config = load_config(env)
    quiet = command != "run" or (config.telegram.token is None and config.discord.token is None)
    configure_logging(config, interactive=quiet)
    try:
        code = asyncio.run(_dispatch(command, args, config))
    except KeyboardInterrupt:
        code = 0
    sys.exit(code)


async def _dispatch(command: str, args: argparse.Namespace, config: Config) -> int:
    from bot import operator_cli, service

    if command == "run":
        return await service.run(config)
    if command == "console":
        return await service.console(
            config, room=args.room, admins=args.admin, offline=args.model == "offline"
        )
    return await operator_cli.dispatch(command, args, config)

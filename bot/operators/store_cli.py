"""`compactbot store copy SRC DST` (move a whole store to another backend, verified) and
`compactbot purge` (an operator's forgetting of a member or a message, SPEC 16)."""

from __future__ import annotations

import argparse
import sys
from typing import cast

from compactbot.bot.settings.config import Config
from compactbot.bot.store.backends import create_store, open_store, parse_store_url
from compactbot.bot.store.base import StoreError
from compactbot.bot.store.copying import CopyableStore, CopyReport, copy_store

ERROR_EXIT_STATUS = 1


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    store = sub.add_parser("store", help="whole-store operations (copy to another backend)")
    actions = store.add_subparsers(dest="store_command", required=True)
    copy = actions.add_parser(
        "copy",
        help="copy a whole store into an empty one and verify it (stop the bot first)",
    )
    copy.add_argument("source", help="a path, sqlite:///path or postgresql://…")
    copy.add_argument(
        "destination", help="an empty store: a path, sqlite:///path or postgresql://…"
    )


def add_purge_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    purge = sub.add_parser(
        "purge", help="forget a member's messages or one message everywhere (memory included)"
    )
    purge.add_argument("--chat", required=True, help="chat key, e.g. discord:123 or console:main")
    which = purge.add_mutually_exclusive_group(required=True)
    which.add_argument("--member", help="the member's platform user id")
    which.add_argument("--message", help="the message's platform id")


async def purge(args: argparse.Namespace, config: Config) -> int:
    try:
        store = await open_store(config.storage.database)
        try:
            if args.member is not None:
                count = await store.forget_member(args.chat, args.member)
            else:
                count = await store.forget_messages(args.chat, [args.message])
        finally:
            await store.close()
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ERROR_EXIT_STATUS
    print(f"purged {count} stored rows from {args.chat}")
    return 0


async def dispatch(args: argparse.Namespace) -> int:
    try:
        source_target = parse_store_url(args.source)
        destination_target = parse_store_url(args.destination)
        source = create_store(source_target)
        destination = create_store(destination_target)
        await source.open()
        try:
            await destination.open()
            try:
                # Both backends give raw access to their tables, which `Store` leaves out.
                report = await copy_store(
                    cast(CopyableStore, source), cast(CopyableStore, destination)
                )
            finally:
                await destination.close()
        finally:
            await source.close()
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ERROR_EXIT_STATUS
    _print(report, source_target.shown, destination_target.shown)
    return 0 if report.ok else ERROR_EXIT_STATUS


def _print(report: CopyReport, source: str, destination: str) -> None:
    print(f"copied {source} -> {destination}")
    for count in report.counts:
        print(f"  {count.table}: {count.source} -> {count.destination}")
    for line in report.mismatches:
        print(f"MISMATCH {line}", file=sys.stderr)
    print("verified: counts and running totals match" if report.ok else "verification FAILED")

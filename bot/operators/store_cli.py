"""`compactbot store copy SRC DST`: move a whole store to another backend, verified."""

from __future__ import annotations

import argparse
import sys
from typing import cast

from compactbot.bot.store.backends import create_store, parse_store_url
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


async def dispatch(args: argparse.Namespace) -> int:
    try:
        source_target = parse_store_url(args.source)
        destination_target = parse_store_url(args.destination)
        source = cast(CopyableStore, create_store(source_target))
        destination = cast(CopyableStore, create_store(destination_target))
        await source.open()
        try:
            await destination.open()
            try:
                report = await copy_store(source, destination)
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

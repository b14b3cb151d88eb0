"""Soak: hundreds of SIGKILLs of `compactbot run` while it polls the fake Bot API under load.

The same rounds as tests/reliability/test_polling_kills.py, longer: `python -m bench.polling_soak
[--rounds N] [--seed S]`. Prints what was pushed, stored, lost, duplicated and reordered; exit
status 1 when anything was lost, duplicated or reordered.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

from tests.reliability.polling_kills import KillPlan, kill_rounds

DEFAULT_ROUNDS = 200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.polling_soak")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS)
    parser.add_argument("--seed", type=int, default=KillPlan().seed)
    parser.add_argument("--quick", action="store_true", help="5 rounds, a smoke run")
    args = parser.parse_args(argv)
    plan = KillPlan(rounds=5 if args.quick else args.rounds, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="polling-soak-") as workdir:
        outcome = asyncio.run(kill_rounds(Path(workdir), plan))
    lost, duplicated, reordered = (
        outcome.lost(),
        outcome.duplicated(),
        outcome.out_of_order_chats(),
    )
    print(
        f"polling soak: {outcome.kills} SIGKILLs in {outcome.seconds:.1f} s, "
        f"{outcome.total_pushed} updates pushed, "
        f"{sum(len(ids) for ids in outcome.stored.values())} stored, {len(lost)} lost, "
        f"{duplicated} duplicated, {len(reordered)} chats out of order"
    )
    return 1 if lost or duplicated or reordered else 0


if __name__ == "__main__":
    sys.exit(main())

"""A process for crash tests to SIGKILL: stores messages and compacts in a loop on a real file.

    python -m tests.reliability.crash_driver --db PATH --config PATH --start N
        [--compact-every N] [--hang-summary]

It opens the real App (offline model) and a SessionCompactor on the same store with a slow
summarizer, so a kill can land while a row is stored, while a summary is written, or while a
compaction commits. After each message is committed it prints `stored <platform id>`; the test
treats every printed id as written. `--hang-summary` prints `summarizing` and never returns from
the first summary, so the kill lands "before the summary returns", lock held.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys

from compactbot.bot.app import App
from compactbot.bot.compaction.session_compactor import SessionCompactor, UsageSink
from compactbot.bot.events import InboundMessage
from compactbot.bot.llm.offline_model import OfflineModel
from compactbot.bot.settings.loading import load_config
from compactbot.compression import Summarizer, SummaryRequest
from compactbot.compression.deterministic import deterministic_summary
from tests.harness import RecordingAdapter

CHAT_ID = "crash"
CHAT_KEY = f"test:{CHAT_ID}"
AUTHORS = ("Alice", "Bob", "Carol", "Dave", "Erin")
COMPACT_EVERY_MESSAGES = 10
SUMMARY_DELAY_SECONDS = (0.0, 0.03)
HANG_SECONDS = 600.0


# Long chatter, so the extractive summary (entries clipped to 400 characters) is smaller.
FILLER = " ".join(
    ["and then we went over the flaky integration suite, lunch plans and the staging outage"] * 14
)


def message_text(index: int) -> str:
    """The exact text of message `index`; the test rebuilds it to compare what was stored.

    Each one also sets a new build tag, so every compaction supersedes the memory's last one.
    """
    return (
        f"<<m{index}>> note {index}: runner {index % 5} took {index * 7} seconds {FILLER}. "
        f"The build tag is {build_tag(index)}."
    )


def build_tag(index: int) -> str:
    return f"BT{index}X"


def inbound(index: int) -> InboundMessage:
    author = AUTHORS[index % len(AUTHORS)]
    return InboundMessage(
        platform="test",
        chat_id=CHAT_ID,
        author_id=author.lower(),
        author_name=author,
        text=message_text(index),
        addressed=False,
        platform_message_id=f"p{index}",
    )


class SlowSummarizer:
    """The deterministic summary, after a random delay (or never, when hanging)."""

    def __init__(self, rng: random.Random, *, hang: bool) -> None:
        self._rng = rng
        self._hang = hang

    async def summarize(self, request: SummaryRequest) -> str:
        if self._hang:
            say("summarizing")
            await asyncio.sleep(HANG_SECONDS)
        await asyncio.sleep(self._rng.uniform(*SUMMARY_DELAY_SECONDS))
        return deterministic_summary(request, unavailable=False)


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def drive(
    db: str, config_path: str, start: int, *, compact_every: int, hang: bool, seed: int
) -> None:
    config = load_config({"COMPACTBOT_DB": db, "COMPACTBOT_CONFIG": config_path})
    rng = random.Random(seed)
    async with App(config, llm=OfflineModel()) as app:
        services = app.services
        summarizer = SlowSummarizer(rng, hang=hang)

        def factory(_usage: UsageSink) -> Summarizer:
            return summarizer

        compactor = SessionCompactor(
            services.store,
            services.counter,
            factory,
            lock_ttl_seconds=config.compression.lock_ttl_seconds,
        )
        adapter = RecordingAdapter()
        say("ready")
        index = start
        while True:
            await app.gateway.handle(inbound(index), adapter)
            say(f"stored p{index}")
            index += 1
            if index % compact_every == 0:
                session = await services.store.active_session(CHAT_KEY)
                settings = services.compaction_settings(await services.settings_for(CHAT_KEY))
                report = await compactor.compact(
                    session.id,
                    trigger="manual",
                    settings=settings,
                    system_prompt=await services.system_prompt_for(CHAT_KEY),
                    force=True,
                )
                say(f"compacted {report.outcome}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compact-every", type=int, default=COMPACT_EVERY_MESSAGES)
    parser.add_argument("--hang-summary", action="store_true")
    args = parser.parse_args()
    asyncio.run(
        drive(
            args.db,
            args.config,
            args.start,
            compact_every=args.compact_every,
            hang=args.hang_summary,
            seed=args.seed,
        )
    )


if __name__ == "__main__":
    main()
